import type { Logger } from "@geode/bus";
import {
  type ProjectionDatabase,
  ProjectionLoop,
  type ProjectionOutage,
  type ProjectionStats,
  type StreamKind,
} from "@geode/projection";
import type { ServiceObserver } from "@geode/service";
import type { ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import type { Kysely } from "kysely";
import type { RunMirror } from "./run-mirror.js";

/** Counters of one stream's projector (health, tests, benchmarks). */
export type ProjectorStats = ProjectionStats;

interface BatchSource {
  /** Starts (or restarts) consumption, handing each message to `onMessage`; close() stops it. */
  open(onMessage: (m: JsMsg) => void): Promise<ConsumerMessages>;
}

export interface StreamProjectorOptions {
  kind: StreamKind;
  stream: string;
  consumer: string;
  source: BatchSource;
  db: Kysely<ProjectionDatabase>;
  mirror: RunMirror | undefined;
  batchSize: number;
  /** Batches written concurrently (default 1). */
  writers?: number;
  /** The consumer's ack wait: held messages are marked in progress three times per period. */
  ackWaitMs: number;
  outage?: ProjectionOutage;
  /** Called after a batch committed with messages PostgreSQL refused (now quarantined). */
  onQuarantined?: () => void;
  /** Where each batch's time, rows and quarantined messages are reported. */
  observer: ServiceObserver;
  log: Logger;
}

/**
 * Consumes one stream through the shared durable consumer into the projection loop: each batch
 * is written in one transaction with the offset, mirrored to run files, and only then acked, so
 * a crash at any point loses nothing. While a batch waits (a slow write, a database outage) its
 * messages are marked in progress, so the server does not hand them to another replica; a
 * replica that dies stops doing that, and its messages come back after one ack wait.
 */
export class StreamProjector {
  private stopping = false;
  private iter: ConsumerMessages | undefined;
  private consuming: Promise<void> | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private readonly loop: ProjectionLoop<JsMsg>;

  constructor(private readonly options: StreamProjectorOptions) {
    const { mirror, stream, observer } = options;
    this.loop = new ProjectionLoop<JsMsg>({
      kind: options.kind,
      stream: options.stream,
      consumer: options.consumer,
      db: options.db,
      batchSize: options.batchSize,
      writers: options.writers ?? 1,
      log: options.log,
      ...(options.outage ? { outage: options.outage } : {}),
      async committed({ messages, rows, result, quarantined, seconds }) {
        // After the commit and before the ack: a crash in between redelivers, and the mirror dedups.
        // The run timeline mirrors activity rows, the same typed row, one per event.
        if (mirror) {
          const activity = rows.rows.filter((r) => r.type === "activity_events");
          if (activity.length > 0) await mirror.append(activity);
        }
        for (const m of messages) m.ack();
        observer.recorderBatch(stream, seconds);
        observer.recorderRows("activity_events", result.activity);
        observer.recorderRows("extension_invocations", result.extension);
        observer.recorderRows("session_events", result.session);
        if (quarantined.length > 0) {
          observer.recorderQuarantined(stream, quarantined.length);
          options.onQuarantined?.();
        }
      },
      // Given up (stop, or the mirror failed): another replica, or this one later, gets them now.
      abandoned(messages) {
        for (const m of messages) m.nak();
      },
    });
  }

  get stats(): ProjectorStats {
    return this.loop.stats;
  }

  start(): void {
    const period = Math.max(100, Math.floor(this.options.ackWaitMs / 3));
    // Only a message already held at the previous tick is marked in progress: it has been held
    // for at most two periods, less than the ack wait (three), so nothing is redelivered, and a
    // backlog that commits within a period costs no +WPI per message (a visible share of the
    // recorder's CPU while it drains a backlog).
    let previous = new Set<JsMsg>();
    this.keepAlive = setInterval(() => {
      const now = new Set<JsMsg>();
      for (const m of this.loop.held()) {
        if (previous.has(m)) m.working();
        now.add(m);
      }
      previous = now;
    }, period);
    this.consuming = this.consume();
  }

  /** Stops pulling, finishes the batches being written; what is left is nakked for redelivery. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.iter?.close();
    await this.consuming;
    await this.loop.stop();
    clearInterval(this.keepAlive);
  }

  private async consume(): Promise<void> {
    const { log, stream } = this.options;
    while (!this.stopping) {
      try {
        const iter = await this.options.source.open((m) => this.loop.push(m));
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
}
