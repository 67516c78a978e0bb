import { AuditError, AuditErrorCode } from "./errors.js";
import { MerkleFrontier, type TreeNode } from "./merkle-frontier.js";
import { EMPTY_ROOT, HASH_SIZE, nodeHash } from "./tree-hash.js";
import { assertCount, type NodeId, subtreeNodes } from "./tree-range.js";

/**
 * Where proofs read the tree: the hashes of complete subtrees, which never change once complete
 * (the nodes {@link MerkleFrontier.append} returns). One call per proof asks for every node it
 * needs, so a Postgres store answers with one query (`WHERE (level, index) IN …`).
 */
export interface HashStore {
  /** The hashes of these nodes, in the order asked; rejects with `missing_node` when one is not stored. */
  nodes(ids: readonly NodeId[]): Promise<readonly Uint8Array[]>;
}

/** A {@link HashStore} in memory: for tests, and for `geode audit verify`'s recomputed tree. */
export class MemoryHashStore implements HashStore {
  readonly #levels: Uint8Array[][] = [];

  /** Keeps these nodes (what {@link MerkleFrontier.append} returned). */
  put(nodes: readonly TreeNode[]): void {
    for (const n of nodes) {
      this.#levels[n.level] ??= [];
      this.#levels[n.level]![n.index] = n.hash;
    }
  }

  /** The hash of one node, or undefined when it is not stored. */
  node(id: NodeId): Uint8Array | undefined {
    return this.#levels[id.level]?.[id.index];
  }

  async nodes(ids: readonly NodeId[]): Promise<readonly Uint8Array[]> {
    return ids.map((id) => {
      const hash = this.node(id);
      if (hash === undefined) throw missingNode(id);
      return hash;
    });
  }
}

function missingNode(id: NodeId): AuditError {
  return new AuditError(AuditErrorCode.MissingNode, "the hash store lacks a node", { details: { ...id } });
}

/** A subtree range `[start, end)` of the tree, as proofs name their hashes. */
export type TreeRange = readonly [start: number, end: number];

/**
 * The hash of each range (RFC 9162's MTH of those leaves), from one batch of stored nodes: each
 * range's complete subtrees, folded from the right.
 */
export async function rangeHashes(store: HashStore, ranges: readonly TreeRange[]): Promise<Uint8Array[]> {
  const pieces = ranges.map(([start, end]) => subtreeNodes(start, end));
  const wanted = new Map<string, NodeId>();
  for (const id of pieces.flat()) wanted.set(`${id.level}/${id.index}`, id);
  const ids = [...wanted.values()];
  const hashes = await store.nodes(ids);
  const byKey = new Map<string, Uint8Array>();
  ids.forEach((id, i) => {
    const hash = hashes[i];
    if (hash === undefined || hash.length !== HASH_SIZE) throw missingNode(id);
    byKey.set(`${id.level}/${id.index}`, hash);
  });
  return pieces.map((nodes) =>
    nodes
      .map((id) => byKey.get(`${id.level}/${id.index}`)!)
      .reduceRight((right, left) => nodeHash(left, right)),
  );
}

/** The tree head of the first `size` leaves, from the store. */
export async function treeRoot(store: HashStore, size: number): Promise<Uint8Array> {
  assertCount(size, "size");
  if (size === 0) return EMPTY_ROOT;
  const [root] = await rangeHashes(store, [[0, size]]);
  return root!;
}

/** The frontier of the first `size` leaves, from the store: to resume appending at any size. */
export async function frontierAt(store: HashStore, size: number): Promise<MerkleFrontier> {
  assertCount(size, "size");
  return MerkleFrontier.fromHashes(size, await store.nodes(subtreeNodes(0, size)));
}
