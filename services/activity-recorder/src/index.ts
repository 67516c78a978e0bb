import { ensureBucket, ensureEventStreams, type Logger, type StreamOptions, silentLogger } from "@geode/bus";
import { type Names, RECORDER_CONSUMER } from "@geode/contracts";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection, nanos } from "@nats-io/transport-node";
import { DEFAULT_RUN_FILE_MAX_BYTES, RunMirror } from "./run-mirror.js";
import { type ProjectorStats, StreamProjector } from "./stream-projector.js";

export { DEFAULT_RUN_FILE_MAX_BYTES, type MirrorItem, RunMirror } from "./run-mirror.js";
export { type ProjectorStats, StreamProjector } from "./stream-projector.js";

/** The durable consumer name every replica shares, on both streams. */
export { RECORDER_CONSUMER };
export const DEFAULT_BATCH_SIZE = 1_000;
/** Batches of one stream written at once (each its own transaction and connection). */
export const DEFAULT_WRITERS = 2;
export const DEFAULT_ACK_WAIT_MS = 30_000;

export interface ActivityRecorderOptions {
  nc: NatsConnection;
  names: Names;
  log?: Logger;
  /** An open projection (kept open on stop); otherwise one is opened from `databaseUrl`. */
  db?: ProjectionDb;
  /** PostgreSQL URL; unset (and no `db`) means embedded PGlite under `pgliteDir`. */
  databaseUrl?: string | undefined;
  /** Embedded database directory (default `.geode/pgdata`). */
  pgliteDir?: string;
  /** Run timeline directory (`GEODE_RUNS_DIR`, default `.geode/runs`); null disables the mirror. */
  runsDir?: string | null;
  /** Bound of one run file (default 16 MiB). */
  runFileMaxBytes?: number;
  /** Messages per batch/transaction (default 1,000). */
  batchSize?: number;
  /** Batches of one stream written concurrently (default 2; 1 writes strictly one after another). */
  writers?: number;
  /** Redelivery delay of an unacked message, e.g. after a crash (default 30 s). */
  ackWaitMs?: number;
  streams?: StreamOptions;
}

export interface ActivityRecorder {
  readonly db: ProjectionDb;
  stats(): { events: ProjectorStats; timeline: ProjectorStats };
  stop(): Promise<void>;
}

/**
 * The activity-recorder: the only writer of the Postgres projection. One durable pull consumer
 * per stream, shared by replicas; batches commit with their offset, then ack.
 */
export async function startActivityRecorder(options: ActivityRecorderOptions): Promise<ActivityRecorder> {
  const { nc, names: n } = options;
  const log = options.log ?? silentLogger();
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const writers = Math.max(1, options.writers ?? DEFAULT_WRITERS);
  await ensureEventStreams(nc, n, options.streams);
  const db =
    options.db ??
    (await openProjectionDb({
      ns: n.ns,
      databaseUrl: options.databaseUrl,
      // Both streams' writers hold a connection each while their transactions are open.
      poolSize: Math.max(4, 2 * writers),
      ...(options.pgliteDir !== undefined ? { pgliteDir: options.pgliteDir } : {}),
    }));
  const ownsDb = options.db === undefined;
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const js = jetstream(nc);
    let mirror: RunMirror | undefined;
    if (options.runsDir !== null) {
      const kv = await ensureBucket(nc, n, "runs");
      mirror = new RunMirror(
        kv,
        options.runsDir ?? ".geode/runs",
        options.runFileMaxBytes ?? DEFAULT_RUN_FILE_MAX_BYTES,
        log,
      );
      await mirror.start();
    }
    const projector = (kind: "events" | "timeline", stream: string) => {
      const p = new StreamProjector({
        kind,
        stream,
        consumer: RECORDER_CONSUMER,
        db: db.db,
        mirror,
        batchSize,
        writers,
        log: log.child({ stream }),
        source: {
          async open(onMessage) {
            // Created or updated (same config from every replica); never deleted.
            await jsm.consumers.add(stream, {
              durable_name: RECORDER_CONSUMER,
              ack_policy: AckPolicy.Explicit,
              deliver_policy: DeliverPolicy.All,
              ack_wait: nanos(options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS),
              max_deliver: -1,
              // Bounds what all replicas hold unacked, hence each replica's in-memory queue.
              max_ack_pending: Math.max(10_000, batchSize * 10),
            });
            const c = await js.consumers.get(stream, RECORDER_CONSUMER);
            return c.consume({ max_messages: batchSize * 2, callback: onMessage });
          },
        },
      });
      p.start();
      return p;
    };
    const events = projector("events", n.eventsStream);
    const timeline = projector("timeline", n.timelineStream);
    log.info({ batch_size: batchSize, writers, db: db.kind }, "activity-recorder consuming");
    return {
      db,
      stats: () => ({ events: { ...events.stats }, timeline: { ...timeline.stats } }),
      async stop() {
        await Promise.all([events.stop(), timeline.stop()]);
        await mirror?.stop();
        if (ownsDb) await db.close();
      },
    };
  } catch (err) {
    if (ownsDb) await db.close().catch(() => undefined);
    throw err;
  }
}
