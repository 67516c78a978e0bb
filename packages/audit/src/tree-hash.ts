import { createHash } from "node:crypto";

/** Bytes of a SHA-256 hash: every leaf, node and root hash of an audit log. */
export const HASH_SIZE = 32;

/** The root of the empty tree, `SHA-256()` (RFC 9162 section 2.1.1). */
export const EMPTY_ROOT: Uint8Array = sha256();

const LEAF_PREFIX = Uint8Array.of(0x00);
const NODE_PREFIX = Uint8Array.of(0x01);

function sha256(...parts: Uint8Array[]): Uint8Array {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
}

/** The hash of one leaf: `SHA-256(0x00 || leaf)` (RFC 6962 section 2.1). */
export function leafHash(leaf: Uint8Array): Uint8Array {
  return sha256(LEAF_PREFIX, leaf);
}

/** The hash of an inner node: `SHA-256(0x01 || left || right)`. */
export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return sha256(NODE_PREFIX, left, right);
}

/** True when two hashes hold the same bytes. */
export function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
