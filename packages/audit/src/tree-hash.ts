import { hash } from "node:crypto";

/** Bytes of a SHA-256 hash: every leaf, node and root hash of an audit log. */
export const HASH_SIZE = 32;

/** The root of the empty tree, `SHA-256()` (RFC 9162 section 2.1.1). */
export const EMPTY_ROOT: Uint8Array = sha256(new Uint8Array(0));

/**
 * SHA-256 of `input` in one call: a leaf or a node is hashed once per message on the notary's and
 * verify's paths, where a Hash object per call (createHash, update, digest) cost more than the
 * hashing itself. The digest comes back as a binary (latin1) string turned into bytes: Node's `"buffer"`
 * output allocates each digest apart and took three to four times as long as the hash.
 */
export function sha256(input: Uint8Array | string = ""): Uint8Array {
  const digest = Buffer.from(hash("sha256", input, "binary"), "latin1");
  return new Uint8Array(digest.buffer, digest.byteOffset, HASH_SIZE);
}

/** Reused input of {@link leafHash} and {@link nodeHash} (hashing is synchronous: never shared). */
let scratch = new Uint8Array(256);

function scratchOf(length: number): Uint8Array {
  if (scratch.length < length) scratch = new Uint8Array(Math.max(length, scratch.length * 2));
  return scratch;
}

/** The hash of one leaf: `SHA-256(0x00 || leaf)` (RFC 6962 section 2.1). */
export function leafHash(leaf: Uint8Array): Uint8Array {
  const bytes = scratchOf(1 + leaf.length);
  bytes[0] = 0x00;
  bytes.set(leaf, 1);
  return sha256(bytes.subarray(0, 1 + leaf.length));
}

/** The input of a node of two hashes: 0x01, then both. */
const NODE_INPUT = new Uint8Array(1 + 2 * HASH_SIZE);

/** The hash of an inner node: `SHA-256(0x01 || left || right)`. */
export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  const length = 1 + left.length + right.length;
  const bytes = length === NODE_INPUT.length ? NODE_INPUT : scratchOf(length);
  bytes[0] = 0x01;
  bytes.set(left, 1);
  bytes.set(right, 1 + left.length);
  return sha256(bytes === NODE_INPUT ? bytes : bytes.subarray(0, length));
}

/** True when two hashes hold the same bytes. */
export function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
