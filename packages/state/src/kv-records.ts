import {
  type BucketName,
  encodeJson,
  ensureBucket,
  type GeodeConnection,
  isRevisionConflict,
} from "@geode/bus";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { type KV, type KvEntry, Kvm } from "@nats-io/kv";
import { isLive, type MutateOptions, type MutateResult, mutateKvRecord } from "./mutate-kv-record.js";

/** How a store opens its bucket. */
export interface StoreOptions {
  /** Create the bucket if absent (default true); false for a reader that may only bind to it. */
  create?: boolean;
}

/** How a store's records are read and written. */
export interface RecordCodec<T> {
  parse: (raw: unknown) => T;
  /**
   * What every write stores instead of the value given: text from the wire with its secrets
   * masked (docs/protocol.md, "KV buckets"), once here rather than at each writer.
   */
  clean?: (value: T) => T;
}

/** A value with the revision it was read at. */
export interface Revisioned<T> {
  value: T;
  revision: number;
}

/** One change seen by a watch: the key's value, or null when it was deleted or is not a valid record. */
export interface RecordChange<T> {
  key: string;
  value: T | null;
  /** True when the key holds something that is not a valid record (ignored, value null). */
  malformed: boolean;
}

/** One stored revision of a key, as the bucket's history keeps it. */
export interface StoredVersion {
  key: string;
  revision: number;
  /** True for a delete or purge. */
  deleted: boolean;
  /** The value as JSON; undefined when it is not JSON or was deleted. */
  value: unknown;
}

export interface RecordWatch {
  stop(): Promise<void>;
}

/** How often a watch re-reads its whole bucket unless told otherwise (see `KvRecords.watch`). */
const DEFAULT_RESYNC_MS = 30_000;

function safeJson(entry: KvEntry): unknown {
  try {
    return entry.json();
  } catch {
    return undefined;
  }
}

/**
 * Typed JSON records in one KV bucket: every read is parsed with the record's schema, every
 * read-modify-write goes through `mutateKvRecord`. The typed stores of this package are built on
 * it; each adds only the writes its owner makes.
 */
export class KvRecords<T> {
  private readonly clean: (value: T) => T;
  /** The bucket's stream and its key prefix (`$KV.{bucket}.`), read once. */
  private stream: Promise<{ name: string; prefix: string }> | undefined;

  constructor(
    readonly kv: KV,
    private readonly jsm: JetStreamManager,
    private readonly parseRecord: (raw: unknown) => T,
    clean?: (value: T) => T,
  ) {
    this.clean = clean ?? ((v) => v);
  }

  /**
   * Opens one of the namespace's buckets, creating it if absent (its owner provisions it); with
   * `create: false` only binds to it (a reader without the right to create it), and reads of a
   * bucket that does not exist fail.
   */
  static async open<T>(
    conn: GeodeConnection,
    bucket: BucketName,
    codec: ((raw: unknown) => T) | RecordCodec<T>,
    options: StoreOptions = {},
  ): Promise<KvRecords<T>> {
    const { parse, clean } = typeof codec === "function" ? { parse: codec, clean: undefined } : codec;
    const kv =
      options.create === false
        ? await new Kvm(conn.nc).open(conn.names.buckets[bucket])
        : await ensureBucket(conn.nc, conn.names, bucket);
    return new KvRecords(kv, await jetstreamManager(conn.nc, { checkAPI: false }), parse, clean);
  }

  /** The parsed value, or undefined when the raw value is not a valid record. */
  tryParse(raw: unknown): T | undefined {
    try {
      return this.parseRecord(raw);
    } catch {
      return undefined;
    }
  }

  /** The record at `key` with its revision, or null (absent or deleted). Throws on a malformed one. */
  async read(key: string): Promise<Revisioned<T> | null> {
    const entry = await this.kv.get(key);
    return isLive(entry) ? { value: this.parseRecord(entry.json()), revision: entry.revision } : null;
  }

  async get(key: string): Promise<T | null> {
    return (await this.read(key))?.value ?? null;
  }

  /** Revision-checked read-modify-write (see `mutateKvRecord`). */
  mutate(
    key: string,
    update: (current: T | null) => T | Promise<T>,
    options?: MutateOptions,
  ): Promise<MutateResult<T>> {
    return mutateKvRecord(
      this.kv,
      key,
      (raw) => this.parseRecord(raw),
      async (current) => this.clean(await update(current)),
      options,
    );
  }

  /** Creates the key only if it is absent or deleted; returns null when it already holds a value. */
  async create(key: string, value: T): Promise<number | null> {
    try {
      return await this.kv.create(key, encodeJson(this.clean(value)));
    } catch (err) {
      if (isRevisionConflict(err)) return null;
      throw err;
    }
  }

  /** Writes if nobody changed the key since `revision`; returns the new revision, null on a conflict. */
  async update(key: string, value: T, revision: number): Promise<number | null> {
    try {
      return await this.kv.update(key, encodeJson(this.clean(value)), revision);
    } catch (err) {
      if (isRevisionConflict(err)) return null;
      throw err;
    }
  }

  /** Writes unconditionally (records with one writer per key). */
  put(key: string, value: T): Promise<number> {
    return this.kv.put(key, encodeJson(this.clean(value)));
  }

  /** Deletes the key (keeping its history); with `revision`, only if nobody changed it since. */
  async delete(key: string, revision?: number): Promise<boolean> {
    try {
      await this.kv.delete(key, revision === undefined ? undefined : { previousSeq: revision });
      return true;
    } catch (err) {
      if (isRevisionConflict(err)) return false;
      throw err;
    }
  }

  /** Deletes the key and its history. */
  async purge(key: string): Promise<void> {
    await this.kv.purge(key);
  }

  /**
   * The newest entry of every live key matching `filter` (default all). The keys come from one
   * stream-info request (the subjects the bucket's stream holds), not from `kv.keys()`: its
   * ordered consumer, when reset on a loaded server, waits for a 30 s idle heartbeat to end.
   */
  private async liveEntries(filter = ">"): Promise<KvEntry[]> {
    this.stream ??= (async () => {
      const { bucket, streamInfo } = await this.kv.status();
      const [subjects] = streamInfo.config.subjects ?? [];
      if (subjects === undefined || !subjects.endsWith(">"))
        throw new Error(`bucket ${bucket} has no key subjects`);
      return { name: streamInfo.config.name, prefix: subjects.slice(0, -1) };
    })().catch((err: unknown) => {
      this.stream = undefined;
      throw err;
    });
    const { name, prefix } = await this.stream;
    const info = await this.jsm.streams.info(name, { subjects_filter: `${prefix}${filter}` });
    const out: KvEntry[] = [];
    for (const subject of Object.keys(info.state.subjects ?? {})) {
      const entry = await this.kv.get(subject.slice(prefix.length));
      if (entry && isLive(entry)) out.push(entry);
    }
    // In the order the bucket last wrote them, as `kv.keys()` gave them.
    return out.sort((a, b) => a.revision - b.revision);
  }

  /** Live keys matching `filter` (default all). */
  async keys(filter = ">"): Promise<string[]> {
    return (await this.liveEntries(filter)).map((e) => e.key);
  }

  /** Every live record matching `filter`; `onMalformed` hears of keys holding something else. */
  async list(
    filter = ">",
    onMalformed?: (key: string) => void,
  ): Promise<Array<{ key: string } & Revisioned<T>>> {
    const out: Array<{ key: string } & Revisioned<T>> = [];
    for (const entry of await this.liveEntries(filter)) {
      const key = entry.key;
      const value = this.tryParse(safeJson(entry));
      if (value === undefined) onMalformed?.(key);
      else out.push({ key, value, revision: entry.revision });
    }
    return out;
  }

  /** Every revision the bucket still holds of every key (up to its `history` per key), oldest first. */
  async history(): Promise<StoredVersion[]> {
    const out: StoredVersion[] = [];
    for await (const entry of await this.kv.history({ key: ">" })) {
      const deleted = entry.operation !== "PUT";
      out.push({
        key: entry.key,
        revision: entry.revision,
        deleted,
        value: deleted ? undefined : safeJson(entry),
      });
    }
    return out;
  }

  /**
   * Follows the bucket: `apply` gets every current record, then every change. Resolves once the
   * current records were applied, so a reader that starts this before serving never acts on a
   * partial view. `onError` hears of a watch that ended by failure. Every `resyncMs` the bucket is
   * also read whole and any key whose revision the watch has not delivered is applied (a deleted
   * one as null): a watch that stalled or ended (a NATS node lost under it) cannot leave the reader
   * on a stale view for longer than that. A re-read that overlapped a change the watch delivered is
   * dropped: the watch is alive, and its view is the newer one.
   */
  async watch(
    apply: (change: RecordChange<T>) => void,
    options: {
      onError?: ((err: unknown) => void) | undefined;
      /** The key a record belongs under: a record stored under another key counts as malformed. */
      keyOf?: (value: T) => string;
      resyncMs?: number;
    } = {},
  ): Promise<RecordWatch> {
    const { onError, keyOf, resyncMs = DEFAULT_RESYNC_MS } = options;
    /** The revision of each key as last applied, and how many changes were applied. */
    const known = new Map<string, number>();
    let changes = 0;
    const applyEntry = (entry: KvEntry) => {
      // A watch that resumes after a re-read may deliver revisions older than the one applied.
      if ((known.get(entry.key) ?? 0) > entry.revision) return;
      changes++;
      if (entry.operation !== "PUT") {
        known.delete(entry.key);
        apply({ key: entry.key, value: null, malformed: false });
        return;
      }
      known.set(entry.key, entry.revision);
      let value = this.tryParse(safeJson(entry));
      if (value !== undefined && keyOf && keyOf(value) !== entry.key) value = undefined;
      apply({ key: entry.key, value: value ?? null, malformed: value === undefined });
    };
    // The last message of the stream is the newest entry of some key, so once the watch has
    // delivered that revision the initial snapshot is complete.
    const status = await this.kv.status();
    const lastSeq = status.streamInfo.state.last_seq;
    let markReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => {
      markReady = resolve;
    });
    if (status.streamInfo.state.messages === 0) markReady();
    const watcher = await this.kv.watch({ key: ">" });
    const loop = (async () => {
      for await (const entry of watcher) {
        applyEntry(entry);
        if (entry.revision >= lastSeq) markReady();
      }
      markReady();
    })().catch((err: unknown) => {
      onError?.(err);
      markReady();
    });
    await ready;
    const resync = async () => {
      const before = changes;
      const current: KvEntry[] = [];
      try {
        current.push(...(await this.liveEntries()));
      } catch {
        return; // NATS is away too: the next re-read tries again
      }
      if (changes !== before) return;
      const live = new Set(current.map((e) => e.key));
      for (const entry of current) if (known.get(entry.key) !== entry.revision) applyEntry(entry);
      for (const key of [...known.keys()])
        if (!live.has(key)) {
          changes++;
          known.delete(key);
          apply({ key, value: null, malformed: false });
        }
    };
    let resyncing: Promise<void> = Promise.resolve();
    const timer = setInterval(() => {
      resyncing = resyncing.then(resync);
    }, resyncMs);
    timer.unref?.();
    return {
      async stop() {
        clearInterval(timer);
        watcher.stop();
        await loop;
        await resyncing;
      },
    };
  }
}
