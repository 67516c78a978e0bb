import type { Kysely } from "kysely";
import type { LogName } from "./audit-options.js";
import { readLeafHashes } from "./audit-tables.js";

/** Leaves read from Postgres at a time; the next chunk is read while this one is compared. */
const CHUNK = 10_000;

/**
 * The leaf hashes the notary stored for one log (level 0 of `{ns}.audit_tree`), a chunk at a
 * time, the chunk after the one asked for read ahead: `verify` compares each message with its
 * stored leaf without waiting on Postgres, and without an await per message once a chunk is in.
 */
export class StoredLeaves {
  #at = -1;
  #chunk = new Map<number, Uint8Array>();
  #ahead: { at: number; read: Promise<Map<number, Uint8Array>> } | undefined;

  constructor(
    // biome-ignore lint/suspicious/noExplicitAny: the audit tables are read through raw SQL.
    private readonly db: Kysely<any>,
    private readonly ns: string,
    private readonly log: LogName,
    /** The stored tree's size: leaves at or past it are not stored. */
    readonly size: number,
  ) {}

  /** True when {@link StoredLeaves.get} answers for this leaf without reading. */
  has(index: number): boolean {
    return index >= this.size || Math.floor(index / CHUNK) * CHUNK === this.#at;
  }

  /** The stored hash of a leaf whose chunk is in memory ({@link StoredLeaves.has}); undefined when not stored. */
  get(index: number): Uint8Array | undefined {
    return index >= this.size ? undefined : this.#chunk.get(index);
  }

  /** Reads the chunk of a leaf (taking the one read ahead when it is that one), and reads ahead the next. */
  async load(index: number): Promise<void> {
    if (this.has(index)) return;
    const at = Math.floor(index / CHUNK) * CHUNK;
    const read = this.#ahead?.at === at ? this.#ahead.read : this.read(at);
    this.#ahead = undefined;
    this.#chunk = await read;
    this.#at = at;
    const next = at + CHUNK;
    if (next < this.size) {
      const ahead = this.read(next);
      // Read ahead and perhaps never asked for (the verdict came first): its failure is not one.
      ahead.catch(() => undefined);
      this.#ahead = { at: next, read: ahead };
    }
  }

  /** The stored hash of any leaf; undefined when not stored. */
  async leaf(index: number): Promise<Uint8Array | undefined> {
    await this.load(index);
    return this.get(index);
  }

  private read(at: number): Promise<Map<number, Uint8Array>> {
    return readLeafHashes(this.db, this.ns, this.log, at, Math.min(at + CHUNK, this.size));
  }
}
