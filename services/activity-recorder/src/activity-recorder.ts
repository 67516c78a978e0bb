import {
  ensureBucket,
  ensureDurableConsumer,
  ensureEventStreams,
  type Logger,
  type StreamOptions,
  silentLogger,
} from "@geode/bus";
import { type Names, RECORDER_CONSUMER, recorderLagMessages } from "@geode/contracts";
import {
  backoffDelay,
  DEFAULT_RETRY,
  openProjectionDb,
  type ProjectionDb,
  type ProjectionHealth,
  ProjectionOutage,
  type RetryPolicy,
  redactDatabaseUrl,
} from "@geode/projection";
import { NO_OBSERVER, type ServiceObserver } from "@geode/service";
import {
  AckPolicy,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import { type NatsConnection, nanos } from "@nats-io/transport-node";
import { QuarantineNote } from "./quarantine-note.js";
import { DEFAULT_ACK_WAIT_MS, DEFAULT_BATCH_SIZE, DEFAULT_WRITERS } from "./recorder-config.js";
import { DEFAULT_RUN_FILE_MAX_BYTES, RunMirror } from "./run-mirror.js";
import { type ProjectorStats, StreamProjector, type StreamProjectorOptions } from "./stream-projector.js";

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
  /** Redelivery delay of a message held by a replica that stopped answering (default 3 s). */
  ackWaitMs?: number;
  /** Backoff of failed projection writes (default 100 ms doubling to 2 s). */
  retry?: RetryPolicy;
  streams?: StreamOptions;
  /** Where batches, rows, quarantined messages and the lag are reported (default: nowhere). */
  observer?: ServiceObserver;
}

export interface ActivityRecorder {
  readonly db: ProjectionDb;
  stats(): { events: ProjectorStats; timeline: ProjectorStats };
  /**
   * `degraded` with the reason while the projection cannot be written; a `note` naming the
   * quarantined messages, if any, while it can.
   */
  health(): ProjectionHealth & { note?: string };
  stop(): Promise<void>;
}

/**
 * The activity-recorder: the only writer of the Postgres projection. One durable pull consumer
 * per stream, shared by replicas; batches commit with their offset, then ack. A database that is
 * down at start or goes away later degrades it (health says why); writes are retried with backoff
 * and it catches up by itself when the database is back.
 */
export async function startActivityRecorder(options: ActivityRecorderOptions): Promise<ActivityRecorder> {
  const { nc, names: n } = options;
  const log = options.log ?? silentLogger();
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const writers = Math.max(1, options.writers ?? DEFAULT_WRITERS);
  const ackWaitMs = options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS;
  const retry = options.retry ?? DEFAULT_RETRY;
  const observer = options.observer ?? NO_OBSERVER;
  const outage = new ProjectionOutage(
    log,
    Date.now,
    options.databaseUrl ? `PostgreSQL at ${redactDatabaseUrl(options.databaseUrl)}` : undefined,
  );
  await ensureEventStreams(nc, n, options.streams);
  const db = options.db ?? (await openRecorderDb(options, writers));
  const ownsDb = options.db === undefined;
  let stopped = false;
  const projectors: StreamProjector[] = [];
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const js = jetstream(nc);
    const mirror = options.runsDir === null ? undefined : await startMirror(options, log);
    const quarantine = new QuarantineNote(db.db, n.ns, log);
    const projector = (kind: "events" | "timeline", stream: string) =>
      new StreamProjector({
        kind,
        stream,
        consumer: RECORDER_CONSUMER,
        db: db.db,
        mirror,
        batchSize,
        writers,
        ackWaitMs,
        outage,
        onQuarantined: () => void quarantine.refresh(),
        observer,
        log: log.child({ stream }),
        source: durableSource({ jsm, js }, stream, { ackWaitMs, batchSize }),
      });
    projectors.push(projector("events", n.eventsStream), projector("timeline", n.timelineStream));
    observer.recorderLag(() => recorderLag(jsm, [n.eventsStream, n.timelineStream]));
    for (const stream of [n.eventsStream, n.timelineStream]) observer.recorderQuarantined(stream, 0);
    // Consumption starts once the tables exist. A database that is down at start delays that
    // (health says why) instead of stopping the service.
    const migrated = ownsDb ? await migrateOnce(db, outage) : true;
    const started = (async () => {
      if (!migrated) await retryUntilDone(() => db.migrate(), { retry, outage, stopped: () => stopped });
      if (stopped) return;
      quarantine.start();
      for (const p of projectors) p.start();
      log.info(
        { batch_size: batchSize, writers, ack_wait_ms: ackWaitMs, db: db.kind },
        "activity-recorder consuming",
      );
    })();
    return {
      db,
      stats: () => ({ events: { ...projectors[0]!.stats }, timeline: { ...projectors[1]!.stats } }),
      health: () => {
        const note = quarantine.note;
        return note === undefined ? outage.health : { ...outage.health, note };
      },
      async stop() {
        stopped = true;
        observer.recorderLag(undefined);
        await started;
        await Promise.all(projectors.map((p) => p.stop()));
        await quarantine.stop();
        await mirror?.stop();
        if (ownsDb) await db.close();
      },
    };
  } catch (err) {
    if (ownsDb) await db.close().catch(() => undefined);
    throw err;
  }
}

/** The projection database, not migrated yet (startActivityRecorder migrates it, with retries). */
function openRecorderDb(options: ActivityRecorderOptions, writers: number): Promise<ProjectionDb> {
  return openProjectionDb({
    ns: options.names.ns,
    databaseUrl: options.databaseUrl,
    // Both streams' writers hold a connection each while their transactions are open.
    poolSize: Math.max(4, 2 * writers),
    // Migrated below, with retries: a database that is down at start only delays the projection.
    migrate: false,
    command: "activity-recorder",
    ...(options.pgliteDir !== undefined ? { pgliteDir: options.pgliteDir } : {}),
  });
}

/** The JSONL mirror of active runs, started. */
async function startMirror(options: ActivityRecorderOptions, log: Logger): Promise<RunMirror> {
  const kv = await ensureBucket(options.nc, options.names, "runs");
  const mirror = new RunMirror(
    kv,
    options.runsDir ?? ".geode/runs",
    options.runFileMaxBytes ?? DEFAULT_RUN_FILE_MAX_BYTES,
    log,
  );
  await mirror.start();
  return mirror;
}

/** A stream's messages through the recorder's durable consumer, shared by every replica. */
function durableSource(
  { jsm, js }: { jsm: JetStreamManager; js: JetStreamClient },
  stream: string,
  options: { ackWaitMs: number; batchSize: number },
): StreamProjectorOptions["source"] {
  return {
    async open(onMessage) {
      // Created or updated (same config from every replica); never deleted.
      await ensureDurableConsumer(jsm, stream, {
        durable_name: RECORDER_CONSUMER,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: nanos(options.ackWaitMs),
        max_deliver: -1,
        // Bounds what all replicas hold unacked, hence each replica's in-memory queue.
        max_ack_pending: Math.max(10_000, options.batchSize * 10),
      });
      const c = await js.consumers.get(stream, RECORDER_CONSUMER);
      return c.consume({ max_messages: options.batchSize * 2, callback: onMessage });
    },
  };
}

/** One migration attempt: false (and the outage reported) when the database cannot be reached. */
async function migrateOnce(db: ProjectionDb, outage: ProjectionOutage): Promise<boolean> {
  const startedAt = outage.attempt();
  try {
    await db.migrate();
    return true;
  } catch (err) {
    outage.failed(0, err, startedAt);
    return false;
  }
}

/** Runs `work` until it succeeds (or `stopped()`), reporting failures to the outage tracker. */
async function retryUntilDone(
  work: () => Promise<void>,
  options: { retry: RetryPolicy; outage: ProjectionOutage; stopped: () => boolean },
): Promise<void> {
  for (let attempt = 0; !options.stopped(); attempt++) {
    const startedAt = options.outage.attempt();
    try {
      await work();
      options.outage.succeeded(startedAt);
      return;
    } catch (err) {
      options.outage.failed(0, err, startedAt);
      await new Promise((r) => setTimeout(r, backoffDelay(options.retry, attempt)));
    }
  }
}

/**
 * Messages of each stream not yet applied (`recorderLagMessages`, shared by every replica). A
 * stream or consumer that cannot be read is left out of this scrape.
 */
async function recorderLag(
  jsm: JetStreamManager,
  streams: string[],
): Promise<Array<{ stream: string; lag: number }>> {
  const lags = await Promise.all(
    streams.map(async (stream) => {
      try {
        const [si, ci] = await Promise.all([
          jsm.streams.info(stream),
          jsm.consumers.info(stream, RECORDER_CONSUMER),
        ]);
        return { stream, lag: recorderLagMessages(si.state, ci.ack_floor.stream_seq) };
      } catch {
        return undefined;
      }
    }),
  );
  return lags.filter((l) => l !== undefined);
}
