import { AuditError, AuditErrorCode } from "./errors.js";

/**
 * A complete subtree: the `index`-th perfect subtree of height `level`, over the leaves
 * `[index · 2^level, (index + 1) · 2^level)`; level 0 is a leaf. Once its last leaf is appended
 * its hash never changes, which is what lets a store keep it forever.
 */
export interface NodeId {
  readonly level: number;
  readonly index: number;
}

/**
 * Sizes and indexes are plain numbers: JavaScript's bitwise operators work on 32 bits, so the
 * tree arithmetic below divides instead, and holds for every safe integer.
 */
export function assertCount(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new AuditError(AuditErrorCode.InvalidArgument, `${what} must be a non-negative safe integer`, {
      details: { [what]: n },
    });
  }
}

/** The largest power of two smaller than `n` (n ≥ 2): where RFC 9162 splits a tree of `n` leaves. */
export function splitSize(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The complete subtrees that make up the subtree `[start, end)` of the tree, largest first: one per
 * set bit of its width. `start` must be a multiple of a power of two at least that width (as every
 * range RFC 9162's proofs and roots name is); then the range's hash is these nodes folded from the
 * right.
 */
export function subtreeNodes(start: number, end: number): NodeId[] {
  const nodes: NodeId[] = [];
  let level = 0;
  while (2 ** (level + 1) <= end - start) level++;
  for (let at = start; at < end; level--) {
    const width = 2 ** level;
    if (at + width > end) continue;
    if (at % width !== 0) {
      throw new AuditError(AuditErrorCode.InvalidArgument, "range is not a subtree of the tree", {
        details: { start, end },
      });
    }
    nodes.push({ level, index: at / width });
    at += width;
  }
  return nodes;
}
