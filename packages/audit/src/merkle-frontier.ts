import { fromBase64, toBase64 } from "./base64.js";
import { AuditError, AuditErrorCode } from "./errors.js";
import { EMPTY_ROOT, HASH_SIZE, nodeHash } from "./tree-hash.js";
import { assertCount, type NodeId } from "./tree-range.js";

/** A complete subtree with its hash, as a store keeps it. */
export interface TreeNode extends NodeId {
  readonly hash: Uint8Array;
}

/** A frontier as JSON can hold it (a Postgres `jsonb`, a file): its size and base64 hashes. */
export interface FrontierSnapshot {
  readonly size: number;
  /** The complete subtrees covering `[0, size)`, largest (leftmost) first: one per set bit of size. */
  readonly hashes: readonly string[];
}

/** The number of set bits of a safe integer (32-bit operators would cut it). */
function setBits(n: number): number {
  let bits = 0;
  for (let rest = n; rest > 0; rest = Math.floor(rest / 2)) bits += rest % 2;
  return bits;
}

/** The leaf hash of an argument, checked. */
function assertHash(hash: Uint8Array, what: string): void {
  if (!(hash instanceof Uint8Array) || hash.length !== HASH_SIZE) {
    throw new AuditError(AuditErrorCode.InvalidArgument, `${what} must be ${HASH_SIZE} bytes`);
  }
}

/**
 * The append-only tree's frontier (its compact range): the hashes of the complete subtrees that
 * cover every leaf so far, at most one per level. It is all it takes to append and to compute the
 * root at the current size, so a notary stores it and resumes from it instead of re-reading.
 */
export class MerkleFrontier {
  #size = 0;
  #hashes: Uint8Array[] = [];

  /** The number of leaves appended. */
  get size(): number {
    return this.#size;
  }

  /** The frontier's hashes, largest subtree first. */
  get hashes(): readonly Uint8Array[] {
    return [...this.#hashes];
  }

  /**
   * Appends one leaf hash; returns the nodes completed by it, bottom up: the leaf itself, then each
   * subtree it closed. A store that keeps these has every hash a proof will ever ask for.
   */
  append(leaf: Uint8Array): TreeNode[] {
    assertHash(leaf, "leaf hash");
    const leafIndex = this.#size;
    const done: TreeNode[] = [{ level: 0, index: leafIndex, hash: leaf }];
    let hash = leaf;
    for (let level = 1, n = leafIndex; n % 2 === 1; level++, n = (n - 1) / 2) {
      hash = nodeHash(this.#hashes.pop()!, hash);
      done.push({ level, index: Math.floor(leafIndex / 2 ** level), hash });
    }
    this.#hashes.push(hash);
    this.#size++;
    return done;
  }

  /**
   * Appends one leaf hash, like {@link MerkleFrontier.append}, without the list of nodes it
   * completed: for a reader that only needs the roots (`geode audit verify`).
   */
  appendHash(leaf: Uint8Array): void {
    assertHash(leaf, "leaf hash");
    let hash = leaf;
    for (let n = this.#size; n % 2 === 1; n = (n - 1) / 2) hash = nodeHash(this.#hashes.pop()!, hash);
    this.#hashes.push(hash);
    this.#size++;
  }

  /** The tree head at the current size (RFC 9162's MTH): the frontier folded from the right. */
  root(): Uint8Array {
    let root = this.#hashes.at(-1);
    if (root === undefined) return EMPTY_ROOT;
    for (let i = this.#hashes.length - 2; i >= 0; i--) root = nodeHash(this.#hashes[i]!, root);
    return root;
  }

  /** The frontier as JSON data, for {@link MerkleFrontier.restore}. */
  snapshot(): FrontierSnapshot {
    return { size: this.#size, hashes: this.#hashes.map(toBase64) };
  }

  /** A frontier of `size` leaves from its hashes (largest subtree first), checked. */
  static fromHashes(size: number, hashes: readonly Uint8Array[]): MerkleFrontier {
    assertCount(size, "size");
    if (hashes.length !== setBits(size) || hashes.some((h) => h.length !== HASH_SIZE)) {
      throw new AuditError(AuditErrorCode.MalformedFrontier, "frontier hashes do not match its size", {
        details: { size, hashes: hashes.length },
      });
    }
    const frontier = new MerkleFrontier();
    frontier.#size = size;
    frontier.#hashes = hashes.map((h) => new Uint8Array(h));
    return frontier;
  }

  /** A frontier back from a {@link FrontierSnapshot} (stored data, so checked like input). */
  static restore(snapshot: unknown): MerkleFrontier {
    const s = snapshot as Partial<FrontierSnapshot> | null;
    const size = s?.size;
    // At most one hash per bit of a safe integer: a longer list is refused before it is decoded.
    const list = Array.isArray(s?.hashes) && s.hashes.length <= 53 ? s.hashes : null;
    const hashes = list?.map((h) => (typeof h === "string" ? fromBase64(h) : null));
    if (
      typeof size !== "number" ||
      !Number.isSafeInteger(size) ||
      size < 0 ||
      !hashes ||
      hashes.includes(null)
    ) {
      throw new AuditError(AuditErrorCode.MalformedFrontier, "not a frontier snapshot");
    }
    return MerkleFrontier.fromHashes(size, hashes as Uint8Array[]);
  }
}
