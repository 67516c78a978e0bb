import type { Logger } from "@geode/bus";
import { type ProjectionDatabase, projectMessages, type StreamKind, writeBatch } from "@geode/projection";
import type { ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import type { Kysely } from "kysely";
import type { RunMirror } from "./run-mirror.js";

/** Counters of one stream's projector (health, tests, benchmarks). */
export interface ProjectorStats {
  /** Messages acked after their batch committed. */
  applied: number;
  /** Rows newly inserted (already-present rows are not counted). */
  inserted: number;
  /** Messages stored nowhere on purpose (tool_exec_failed duplicates). */
  skipped: number;
  /** Messages that are not valid on their stream: logged, acked, stored nowhere. */
  rejected: number;
  batches: number;
  failedBatches: number;
  /** Highest stream sequence committed by this process. */
  lastSeq: number;
}

export interface BatchSource {
  /** Starts (or restarts) consumption, handing each message to `onMessage`; close() stops it. */
  open(onMessage: (m: JsMsg) => void): Promise<ConsumerMessages>;
}

/**
 * Consumes one stream through the shared durable consumer: each batch (what is buffered, up to
 * `batchSize`) is decoded, written in one transaction with the offset, mirrored to run files, and
 * only then acked. A failed write naks the batch for redelivery; nothing is acked before it is
 * committed, so a crash at any point loses nothing.
 *
 * Up to `writers` batches are written at once, each in its own transaction on its own connection:
 * while one commits (WAL flush), the next is already inserting, so Postgres works on both cores.
 * Rows are idempotent and the offset is a high-water mark, so commit order does not matter; the
 * mirror and the acks still follow batch (stream) order.
 */
export class StreamProjector {
  readonly stats: ProjectorStats = {
    applied: 0,
    inserted: 0,
    skipped: 0,
    rejected: 0,
    batches: 0,
    failedBatches: 0,
    lastSeq: 0,
  };
  private stopping = false;
  private iter: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;
  private readonly queue: JsMsg[] = [];
  private pumpScheduled = false;
  private readonly inflight = new Set<Promise<void>>();
  /** Settles when the latest started batch has been mirrored and acked (or nakked). */
  private ordered: Promise<void> = Promise.resolve();

  constructor(
    private readonly options: {
      kind: StreamKind;
      stream: string;
      consumer: string;
      source: BatchSource;
      db: Kysely<ProjectionDatabase>;
      mirror: RunMirror | undefined;
      batchSize: number;
      /** Batches written concurrently (default 1). */
      writers?: number;
      log: Logger;
    },
  ) {}

  start(): void {
    this.loop = this.run();
  }

  /** Stops pulling, finishes the batches being written; queued messages stay unacked (redelivered). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.iter?.close();
    await this.loop;
    while (this.inflight.size > 0) await Promise.all(this.inflight);
  }

  private async run(): Promise<void> {
    const { log, stream } = this.options;
    while (!this.stopping) {
      try {
        const iter = await this.options.source.open((m) => this.enqueue(m));
        this.iter = iter;
        if (this.stopping) {
          await iter.close();
          break;
        }
        const err = await iter.closed();
        if (this.stopping) break;
        log.warn({ err, stream }, "consumer closed; reopening");
      } catch (err) {
        if (this.stopping) break;
        log.warn({ err, stream }, "consumer failed; reopening");
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /**
   * Messages queue up while batches are being written, so the next batch takes everything that
   * arrived meanwhile (up to `batchSize`): one message when idle (low latency), full batches under
   * load. The consumer's max_ack_pending bounds the queue.
   */
  private enqueue(m: JsMsg): void {
    this.queue.push(m);
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // Let the rest of the socket read arrive first, so a burst becomes one batch.
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    const writers = Math.max(1, this.options.writers ?? 1);
    while (this.queue.length > 0 && !this.stopping && this.inflight.size < writers) {
      const batch = this.queue.splice(0, this.options.batchSize);
      const done: Promise<void> = this.flush(batch).finally(() => {
        this.inflight.delete(done);
        this.pump();
      });
      this.inflight.add(done);
    }
  }

  private async flush(batch: JsMsg[]): Promise<void> {
    const { kind, stream, consumer, db, mirror, log } = this.options;
    // Take this batch's place in the mirror/ack order before the first await.
    const previous = this.ordered;
    let settled!: () => void;
    this.ordered = new Promise<void>((resolve) => {
      settled = resolve;
    });
    try {
      const rows = projectMessages(kind, stream, batch);
      let inserted: number;
      try {
        const result = await writeBatch(db, {
          consumer,
          stream,
          lastSeq: rows.lastSeq,
          activity: rows.activity,
          extension: rows.extension,
          session: rows.session,
        });
        inserted = result.activity + result.session;
      } catch (err) {
        this.stats.failedBatches++;
        log.error(
          { err, stream, first_seq: batch[0]?.seq, size: batch.length },
          "batch not written; redelivering",
        );
        for (const m of batch) m.nak(1_000);
        // Keep the order chain intact for the batches behind this one.
        await previous;
        return;
      }
      await previous;
      for (const r of rows.rejects)
        log.warn({ stream, stream_seq: r.seq, reason: r.reason }, "message rejected: stored nowhere, acked");
      // After the commit and before the ack: a crash in between redelivers, and the mirror dedups.
      // The run timeline mirrors activity rows (the seed's "same typed activity row"), one per event.
      if (mirror) {
        const activity = rows.rows.filter((r) => r.type === "activity_events");
        if (activity.length > 0) await mirror.append(activity);
      }
      for (const m of batch) m.ack();
      this.stats.inserted += inserted;
      this.stats.applied += batch.length;
      this.stats.skipped += rows.skipped;
      this.stats.rejected += rows.rejects.length;
      this.stats.batches++;
      this.stats.lastSeq = Math.max(this.stats.lastSeq, rows.lastSeq);
    } finally {
      settled();
    }
  }
}
