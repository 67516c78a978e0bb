import type { Kysely } from "kysely";
import { type BatchResult, writeBatch } from "./batch-writer.js";
import { isContentError } from "./errors.js";
import {
  backoffDelay,
  DEFAULT_RETRY,
  type ProjectionLogger,
  type ProjectionOutage,
  type RetryPolicy,
} from "./projection-outage.js";
import {
  type MessageHeaders,
  type ProjectedBatch,
  projectMessages,
  type StreamKind,
} from "./projection-rows.js";
import type { ProjectionDatabase } from "./projection-schema.js";
import { type QuarantinedRow, quarantineRow } from "./quarantined-messages.js";

/** A stream message as the projection needs it (a JetStream `JsMsg` is one). */
export interface StreamMessage {
  readonly seq: number;
  readonly data: Uint8Array;
  /** Its NATS headers (the recorder reads `traceparent`). */
  readonly headers?: MessageHeaders | undefined;
  /** Its subject (kept when the message is quarantined). */
  readonly subject?: string;
}

/** Counters of one stream's loop (health, tests, benchmarks, replay's summary). */
export interface ProjectionStats {
  /** Messages whose batch committed. */
  applied: number;
  /** Rows newly inserted (already-present rows are not counted). */
  inserted: number;
  /** Messages stored nowhere on purpose (tool_exec_failed duplicates). */
  skipped: number;
  /** Messages that are not valid on their stream: logged, stored nowhere. */
  rejected: number;
  /** Messages PostgreSQL refused for their content: in `quarantined_messages` instead. */
  quarantined: number;
  batches: number;
  /** Write attempts that failed (each is retried, or ends the loop when retries are off). */
  failedBatches: number;
  /** Highest stream sequence committed by this loop. */
  lastSeq: number;
}

/** A batch that committed, handed over in stream order. */
export interface CommittedBatch<M extends StreamMessage> {
  messages: M[];
  /** The rows committed (a quarantined message's rows left out). */
  rows: ProjectedBatch;
  result: BatchResult;
  /** Messages of the batch PostgreSQL refused for their content, recorded in the same commit. */
  quarantined: QuarantinedRow[];
  /** Time from the batch's first write attempt to its commit (retries included), seconds. */
  seconds: number;
}

export interface ProjectionLoopOptions<M extends StreamMessage> {
  kind: StreamKind;
  /** Stream name, e.g. `GEODE_EVENTS`. */
  stream: string;
  /** Name written into `projection_offsets` (the durable consumer, or `replay`). */
  consumer: string;
  db: Kysely<ProjectionDatabase>;
  /** Messages per batch (one transaction). */
  batchSize: number;
  /** Batches written concurrently, each in its own transaction (default 1). */
  writers?: number;
  /**
   * Called for every committed batch in stream order, whatever order the transactions committed
   * in (the run mirror, then the acks). A throw abandons the batch (it is not counted as applied).
   */
  committed?: (batch: CommittedBatch<M>) => Promise<void> | void;
  /** Messages the loop gives up on (stop, a failure, a failed `committed`): not applied here. */
  abandoned?: (messages: M[]) => void;
  /** Failed writes: retried with capped exponential backoff (default), or `false`: the loop fails. */
  retry?: RetryPolicy | false;
  /** Shared outage state: one log line when writes start failing and one when they work again. */
  outage?: ProjectionOutage;
  log: ProjectionLogger;
}

let nextBatchId = 0;

/** A quarantine row's reason when PostgreSQL refused the first one too. */
const BARE_REASON = "refused by PostgreSQL (its reason could not be stored)";

/** What a write committed; undefined when the loop gave up on it. */
type Written = { result: BatchResult; quarantined: QuarantinedRow[] } | undefined;

/** A batch's rows without those of its quarantined messages (they were not stored). */
function withoutQuarantined(rows: ProjectedBatch, quarantined: readonly QuarantinedRow[]): ProjectedBatch {
  if (quarantined.length === 0) return rows;
  const refused = new Set(quarantined.map((q) => q.stream_seq));
  const kept = <T extends { stream_seq: number }>(list: T[]) =>
    list.filter((r) => !refused.has(r.stream_seq));
  return {
    ...rows,
    activity: kept(rows.activity),
    extension: kept(rows.extension),
    session: kept(rows.session),
    rows: rows.rows.filter((r) => !refused.has(r.row.stream_seq)),
  };
}

/**
 * Applies a stream to the projection: the one loop that the activity-recorder (durable consumer,
 * acks) and replay (ordered consumer) share. Messages queue while batches are written; the next
 * batch takes what arrived meanwhile (up to `batchSize`): one message when idle (low latency),
 * full batches under load. Up to `writers` batches are written at once, each in one transaction
 * with the offset; rows are idempotent and the offset is a high-water mark, so commit order does
 * not matter, and `committed` still sees the batches in stream order. A failed write is retried
 * in place, so nothing behind it is reordered, lost or written twice; a write PostgreSQL refuses
 * for its content is not retried but bisected down to the messages it refuses, which are
 * quarantined (`isolate`), so no message can hold up the stream behind it.
 */
export class ProjectionLoop<M extends StreamMessage> {
  readonly stats: ProjectionStats = {
    applied: 0,
    inserted: 0,
    skipped: 0,
    rejected: 0,
    quarantined: 0,
    batches: 0,
    failedBatches: 0,
    lastSeq: 0,
  };
  private readonly queue: M[] = [];
  private readonly inflight = new Map<Promise<void>, M[]>();
  /** Settles when the latest started batch has been handed to `committed` (or abandoned). */
  private ordered: Promise<void> = Promise.resolve();
  private pumpScheduled = false;
  private stopping = false;
  private failure: { err: unknown } | undefined;
  private readonly waiters = new Set<() => void>();
  /** Wakes the batches waiting out a backoff (stop). */
  private readonly sleepers = new Set<() => void>();

  constructor(private readonly options: ProjectionLoopOptions<M>) {}

  /** Queues a message; a burst that arrives in one turn of the event loop becomes one batch. */
  push(m: M): void {
    if (this.stopping) {
      this.options.abandoned?.([m]);
      return;
    }
    this.queue.push(m);
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /** Messages queued or being written: not yet committed (the recorder keeps them alive). */
  *held(): Iterable<M> {
    yield* this.queue;
    for (const batch of this.inflight.values()) yield* batch;
  }

  /** Messages waiting for a writer. */
  get queued(): number {
    return this.queue.length;
  }

  /** Resolves once everything pushed so far is committed; throws the write error of a failed loop. */
  drain(): Promise<void> {
    return this.until(() => this.queue.length === 0 && this.inflight.size === 0);
  }

  /** Resolves once fewer than `max` messages wait for a writer (back-pressure for a reader). */
  room(max: number): Promise<void> {
    return this.until(() => this.queue.length < max);
  }

  /**
   * Stops taking batches: the batches being written finish (one that is retrying gives up), and
   * what is left is handed to `abandoned`.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const wake of [...this.sleepers]) wake();
    this.abandonQueue();
    while (this.inflight.size > 0) await Promise.all(this.inflight.keys());
  }

  private abandonQueue(): void {
    const rest = this.queue.splice(0);
    if (rest.length > 0) this.options.abandoned?.(rest);
    this.notify();
  }

  private async until(done: () => boolean): Promise<void> {
    for (;;) {
      if (this.failure) throw this.failure.err;
      if (done()) return;
      await new Promise<void>((resolve) => this.waiters.add(resolve));
    }
  }

  private notify(): void {
    for (const w of this.waiters) w();
    this.waiters.clear();
  }

  private pump(): void {
    const writers = Math.max(1, this.options.writers ?? 1);
    while (this.queue.length > 0 && !this.stopping && this.inflight.size < writers) {
      const batch = this.queue.splice(0, this.options.batchSize);
      const done: Promise<void> = this.flush(batch).finally(() => {
        this.inflight.delete(done);
        this.notify();
        this.pump();
      });
      this.inflight.set(done, batch);
    }
  }

  /** Writes one batch (retrying), then hands it on in stream order. Never rejects. */
  private async flush(batch: M[]): Promise<void> {
    const { log, stream } = this.options;
    // Take this batch's place in the hand-over order before the first await.
    const previous = this.ordered;
    let settled!: () => void;
    this.ordered = new Promise<void>((resolve) => {
      settled = resolve;
    });
    try {
      const projected = projectMessages(this.options.kind, stream, batch);
      const writeStarted = performance.now();
      const written = await this.write(batch, projected);
      const seconds = (performance.now() - writeStarted) / 1000;
      // Keep the order chain intact for the batches behind this one.
      await previous;
      if (written === undefined) {
        this.options.abandoned?.(batch);
        return;
      }
      const { result, quarantined } = written;
      const rows = withoutQuarantined(projected, quarantined);
      for (const r of rows.rejects)
        log.warn({ stream, stream_seq: r.seq, reason: r.reason }, "message rejected: stored nowhere");
      try {
        await this.options.committed?.({ messages: batch, rows, result, quarantined, seconds });
      } catch (err) {
        log.error(
          { err, stream, first_seq: batch[0]?.seq, size: batch.length },
          "committed batch not handed on",
        );
        this.options.abandoned?.(batch);
        return;
      }
      this.stats.inserted += result.activity + result.session;
      this.stats.applied += batch.length;
      this.stats.skipped += rows.skipped;
      this.stats.rejected += rows.rejects.length;
      this.stats.quarantined += quarantined.length;
      this.stats.batches++;
      this.stats.lastSeq = Math.max(this.stats.lastSeq, rows.lastSeq);
    } finally {
      settled();
    }
  }

  /**
   * The batch's transaction, retried with backoff; undefined when the loop gave up on it. A
   * content error is not retried: the messages behind it are isolated instead.
   */
  private async write(messages: M[], rows: ProjectedBatch, quarantine?: QuarantinedRow): Promise<Written> {
    const { consumer, stream, outage, log } = this.options;
    const retry = this.options.retry === undefined ? DEFAULT_RETRY : this.options.retry;
    const id = ++nextBatchId;
    for (let attempt = 0; ; attempt++) {
      const startedAt = outage?.attempt() ?? 0;
      try {
        const result = await writeBatch(this.options.db, {
          consumer,
          stream,
          lastSeq: rows.lastSeq,
          ...(quarantine
            ? { quarantined: [quarantine] }
            : { activity: rows.activity, extension: rows.extension, session: rows.session }),
        });
        outage?.succeeded(startedAt);
        return { result, quarantined: quarantine ? [quarantine] : [] };
      } catch (err) {
        this.stats.failedBatches++;
        // The database answered: it is up, and no retry changes its answer.
        if (isContentError(err)) {
          outage?.succeeded(startedAt);
          if (quarantine === undefined) return this.isolate(messages, rows, err);
          // Even the quarantine row was refused (something in its subject or reason): without them.
          if (quarantine.error !== BARE_REASON)
            return this.write(messages, rows, { ...quarantine, subject: "", error: BARE_REASON });
        }
        if (retry === false) {
          this.failure ??= { err };
          this.stopping = true;
          this.abandonQueue();
          return undefined;
        }
        if (outage) outage.failed(id, err, startedAt);
        else log.warn({ err, stream }, "batch not written; retrying");
        if (this.stopping) return undefined;
        await this.sleep(backoffDelay(retry, attempt));
        if (this.stopping) return undefined;
      }
    }
  }

  /**
   * Finds the messages of a refused write by halves, in stream order, each half in its own
   * transaction with its offset (a high-water mark, so committing the halves one after the other
   * is what committing the whole would have been); a single refused message is quarantined, with
   * its offset, in place of its rows. Rare, so re-decoding the halves costs nothing that matters.
   */
  private async isolate(messages: M[], rows: ProjectedBatch, err: unknown): Promise<Written> {
    const { kind, stream, consumer, log } = this.options;
    if (messages.length === 1) {
      const message = messages[0]!;
      const row = quarantineRow({ stream, consumer, message, rows, err });
      log.error(
        { stream, stream_seq: message.seq, sqlstate: row.sqlstate, name: row.name },
        `message quarantined: PostgreSQL refused it (${row.error})`,
      );
      return this.write(messages, rows, row);
    }
    const mid = Math.ceil(messages.length / 2);
    const total: BatchResult = { activity: 0, extension: 0, session: 0 };
    const quarantined: QuarantinedRow[] = [];
    for (const half of [messages.slice(0, mid), messages.slice(mid)]) {
      const written = await this.write(half, projectMessages(kind, stream, half));
      if (written === undefined) return undefined;
      total.activity += written.result.activity;
      total.extension += written.result.extension;
      total.session += written.result.session;
      quarantined.push(...written.quarantined);
    }
    return { result: total, quarantined };
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }
}
