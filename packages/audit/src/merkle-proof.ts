import { AuditError, AuditErrorCode } from "./errors.js";
import { type HashStore, rangeHashes, type TreeRange } from "./hash-store.js";
import { assertCount, splitSize } from "./tree-range.js";

/**
 * The ranges whose hashes make the inclusion path of leaf `index` in a tree of `size` leaves
 * (RFC 9162 section 2.1.3.1, PATH): walked from the root down, then put leaf first.
 */
function inclusionRanges(index: number, size: number): TreeRange[] {
  const ranges: TreeRange[] = [];
  let [start, end] = [0, size];
  while (end - start > 1) {
    const mid = start + splitSize(end - start);
    if (index < mid) {
      ranges.push([mid, end]);
      end = mid;
    } else {
      ranges.push([start, mid]);
      start = mid;
    }
  }
  return ranges.reverse();
}

/**
 * The ranges whose hashes make the consistency proof from `size1` to `size2` leaves, for
 * 0 < size1 < size2 (RFC 9162 section 2.1.4.1, SUBPROOF(m, D[n], true)).
 */
function consistencyRanges(size1: number, size2: number): TreeRange[] {
  const ranges: TreeRange[] = [];
  let [start, end, whole] = [0, size2, true];
  while (size1 !== end) {
    const mid = start + splitSize(end - start);
    if (size1 <= mid) {
      ranges.push([mid, end]);
      end = mid;
    } else {
      ranges.push([start, mid]);
      start = mid;
      whole = false;
    }
  }
  // The old tree's own subtree is named unless it is the whole old tree (the verifier knows that one).
  if (!whole) ranges.push([start, end]);
  return ranges.reverse();
}

/** The inclusion proof of leaf `index` in the tree of `size` leaves: its path, leaf first. */
export async function inclusionProof(
  store: HashStore,
  { index, size }: { index: number; size: number },
): Promise<Uint8Array[]> {
  assertCount(index, "index");
  assertCount(size, "size");
  if (index >= size) {
    throw new AuditError(AuditErrorCode.InvalidArgument, "leaf index is not in the tree", {
      details: { index, size },
    });
  }
  return rangeHashes(store, inclusionRanges(index, size));
}

/**
 * The consistency proof that the tree of `size1` leaves is a prefix of the tree of `size2`; empty
 * when size1 is 0 or equal to size2 (nothing to prove).
 */
export async function consistencyProof(
  store: HashStore,
  { size1, size2 }: { size1: number; size2: number },
): Promise<Uint8Array[]> {
  assertCount(size1, "size1");
  assertCount(size2, "size2");
  if (size1 > size2) {
    throw new AuditError(AuditErrorCode.InvalidArgument, "size1 is larger than size2", {
      details: { size1, size2 },
    });
  }
  if (size1 === 0 || size1 === size2) return [];
  return rangeHashes(store, consistencyRanges(size1, size2));
}
