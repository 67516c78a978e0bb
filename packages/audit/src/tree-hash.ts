import { hash } from "node:crypto";

/** Bytes of a SHA-256 hash: every leaf, node and root hash of an audit log. */
export const HASH_SIZE = 32;

/** The root of the empty tree, `SHA-256()` (RFC 9162 section 2.1.1). */
export const EMPTY_ROOT: Uint8Array = sha256();

/**
 * SHA-256 of `bytes` in one call: a leaf or a node is hashed once per message on the notary's and
 * verify's paths, where a Hash object per call (createHash, update, digest) cost more than the
 * hashing itself.
 */
function sha256(bytes: Uint8Array = new Uint8Array(0)): Uint8Array {
  const digest = hash("sha256", bytes, "buffer");
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
}

/** The hash of one leaf: `SHA-256(0x00 || leaf)` (RFC 6962 section 2.1). */
export function leafHash(leaf: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(1 + leaf.length);
  bytes.set(leaf, 1);
  return sha256(bytes);
}

/** The hash of an inner node: `SHA-256(0x01 || left || right)`. */
export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(1 + left.length + right.length);
  bytes[0] = 0x01;
  bytes.set(left, 1);
  bytes.set(right, 1 + left.length);
  return sha256(bytes);
}

/** True when two hashes hold the same bytes. */
export function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
