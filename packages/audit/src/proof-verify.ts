import { AuditError, AuditErrorCode } from "./errors.js";
import { EMPTY_ROOT, HASH_SIZE, nodeHash, sameHash } from "./tree-hash.js";
import { assertCount } from "./tree-range.js";

/** An inclusion proof: leaf `index`'s hash and its path in the tree of `size` leaves. */
export interface InclusionProof {
  readonly index: number;
  readonly size: number;
  readonly leafHash: Uint8Array;
  /** RFC 9162 order: the sibling nearest the leaf first. */
  readonly path: readonly Uint8Array[];
}

/** A consistency proof between the tree heads of `size1` and `size2` leaves. */
export interface ConsistencyProof {
  readonly size1: number;
  readonly size2: number;
  readonly root1: Uint8Array;
  readonly root2: Uint8Array;
  readonly path: readonly Uint8Array[];
}

const isOdd = (n: number) => n % 2 === 1;
const half = (n: number) => Math.floor(n / 2);
const isHash = (h: Uint8Array) => h instanceof Uint8Array && h.length === HASH_SIZE;

function invalid(message: string, details: Record<string, unknown>): AuditError {
  return new AuditError(AuditErrorCode.InvalidProof, message, { details });
}

/**
 * The root an inclusion proof leads to (RFC 9162 section 2.1.3.2), to compare with a signed one.
 * Throws `invalid_proof` when the path cannot be a proof for its index and size (wrong length, a
 * hash of the wrong size).
 */
export function rootFromInclusionProof({ index, size, leafHash, path }: InclusionProof): Uint8Array {
  assertCount(index, "index");
  assertCount(size, "size");
  if (index >= size) throw invalid("leaf index is not in the tree", { index, size });
  if (!isHash(leafHash) || !path.every(isHash)) throw invalid("a hash is not 32 bytes", { index, size });
  let [fn, sn, r] = [index, size - 1, leafHash];
  for (const p of path) {
    if (sn === 0) throw invalid("the path is too long", { index, size, path: path.length });
    if (isOdd(fn) || fn === sn) {
      r = nodeHash(p, r);
      while (!isOdd(fn) && fn !== 0) [fn, sn] = [fn / 2, half(sn)];
    } else {
      r = nodeHash(r, p);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  if (sn !== 0) throw invalid("the path is too short", { index, size, path: path.length });
  return r;
}

/** True when the proof puts the leaf hash in the tree whose head is `root`; false for anything else. */
export function verifyInclusion(proof: InclusionProof & { readonly root: Uint8Array }): boolean {
  try {
    return isHash(proof.root) && sameHash(rootFromInclusionProof(proof), proof.root);
  } catch {
    return false;
  }
}

/**
 * True when `path` proves the tree head `root1` of `size1` leaves a prefix of `root2`, of
 * `size2` (RFC 9162 section 2.1.4.2); false for anything else. Equal sizes need equal roots and an
 * empty path; size1 = 0 needs the empty tree's root and an empty path (RFC 9162 leaves it undefined:
 * the empty tree is a prefix of every tree).
 */
export function verifyConsistency({ size1, size2, root1, root2, path }: ConsistencyProof): boolean {
  const sizesOk = Number.isSafeInteger(size1) && Number.isSafeInteger(size2) && 0 <= size1 && size1 <= size2;
  if (!sizesOk || !isHash(root1) || !isHash(root2) || !path.every(isHash)) return false;
  if (size1 === size2) return path.length === 0 && sameHash(root1, root2);
  if (size1 === 0) return path.length === 0 && sameHash(root1, EMPTY_ROOT);
  if (path.length === 0) return false;
  return consistencyHolds({ size1, size2, root1, root2, path });
}

// Math.log2 rounds 2^53 - 1 to 53: compare back.
const isPowerOfTwo = (n: number) => 2 ** Math.round(Math.log2(n)) === n;

/** RFC 9162 section 2.1.4.2, steps 1 to 7, for 0 < size1 < size2 and a non-empty path. */
function consistencyHolds({ size1, size2, root1, root2, path }: ConsistencyProof): boolean {
  const [first, ...rest] = isPowerOfTwo(size1) ? [root1, ...path] : path;
  let [fn, sn, fr, sr] = [size1 - 1, size2 - 1, first!, first!];
  while (isOdd(fn)) [fn, sn] = [half(fn), half(sn)];
  for (const c of rest) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      [fr, sr] = [nodeHash(c, fr), nodeHash(c, sr)];
      while (!isOdd(fn) && fn !== 0) [fn, sn] = [fn / 2, half(sn)];
    } else {
      sr = nodeHash(sr, c);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && sameHash(fr, root1) && sameHash(sr, root2);
}
