import { parseArgs } from "node:util";
import { connectBus, type NatsConnection, silentLogger } from "@geode/bus";
import { names as buildNames, type Names } from "@geode/contracts";
import {
  describeDbError,
  dropProjectionTables,
  dropSecondaryIndexes,
  ensureSecondaryIndexes,
  type ProjectionDb,
  ProjectionLoop,
  ProjectionUnavailableError,
  type StreamKind,
} from "@geode/projection";
import { type GeodeConfig, loadConfig } from "@geode/service";
import {
  DeliverPolicy,
  JetStreamApiError,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import { type CommandIO, type CommandModule, intOption, UsageError } from "../command.js";
import { openProjectionFromEnv } from "../projection-from-env.js";

/** The consumer name replay writes into `projection_offsets`. */
const REPLAY_CONSUMER = "replay";
const DEFAULT_REPLAY_BATCH = 2_000;
/** Batches written at once, each in its own transaction (as the recorder does). */
const DEFAULT_REPLAY_WRITERS = 2;

/** Config, NATS and the namespace's names, from the CLI's environment (docs/protocol.md#configuration). */
export async function connectFromEnv(
  io: CommandIO,
  client: string,
): Promise<{ config: GeodeConfig; nc: NatsConnection; names: Names }> {
  const config = loadConfig(io.env);
  const nc = await connectBus(config, client);
  return { config, nc, names: buildNames(config.namespace) };
}

interface ReplayResult {
  stream: string;
  firstSeq: number;
  lastSeq: number;
  messages: number;
  inserted: number;
  skipped: number;
  rejected: number;
  /** Messages the database refused for their content: in `quarantined_messages` instead. */
  quarantined: number;
  seconds: number;
}

interface ReplayOptions {
  nc: NatsConnection;
  db: ProjectionDb;
  kind: StreamKind;
  stream: string;
  /** First stream sequence to apply (default: the stream's first). */
  fromSeq?: number;
  batchSize?: number;
  /** Batches written concurrently (default 2). */
  writers?: number;
  onProgress?: (done: number, total: number) => void;
}

/**
 * Applies a stream to the projection through an ordered consumer, up to the stream's last
 * sequence at start, with the recorder's own projection loop (decoder, batching, writer), so the
 * rows are identical and a replay over rows already present changes nothing (idempotent).
 */
async function replayStream(options: ReplayOptions): Promise<ReplayResult> {
  const started = performance.now();
  const jsm = await jetstreamManager(options.nc, { checkAPI: false });
  let state: { first_seq: number; last_seq: number; messages: number };
  try {
    state = (await jsm.streams.info(options.stream)).state;
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === 10059)
      throw new Error(
        `stream ${options.stream} does not exist (nothing was ever published in this namespace)`,
      );
    throw err;
  }
  const first = Math.max(options.fromSeq ?? 1, state.first_seq);
  const target = state.last_seq;
  const result: ReplayResult = {
    stream: options.stream,
    firstSeq: first,
    lastSeq: target,
    messages: 0,
    inserted: 0,
    skipped: 0,
    rejected: 0,
    quarantined: 0,
    seconds: 0,
  };
  if (state.messages === 0 || target < first) return result;
  const total = target - first + 1;
  const batchSize = options.batchSize ?? DEFAULT_REPLAY_BATCH;
  const oc = await jetstream(options.nc).consumers.get(options.stream, {
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: first,
  });
  const iter = await oc.consume({ max_messages: batchSize * 2 });
  let done = 0;
  const loop = new ProjectionLoop<JsMsg>({
    kind: options.kind,
    stream: options.stream,
    consumer: REPLAY_CONSUMER,
    db: options.db.db,
    batchSize,
    writers: options.writers ?? DEFAULT_REPLAY_WRITERS,
    // An operator runs replay: a database error ends it with that error, no retrying (a message
    // the database refuses for its content is quarantined, as the recorder does).
    retry: false,
    log: silentLogger(),
    committed({ rows }) {
      done = Math.max(done, Math.min(total, rows.lastSeq - first + 1));
      options.onProgress?.(done, total);
    },
  });
  try {
    for await (const m of iter) {
      if (m.seq > target) break;
      loop.push(m);
      // The end: the last sequence seen at start, or nothing left (it may have aged out meanwhile).
      if (m.seq >= target || m.info.pending === 0) break;
      // Decoding and reading overlap the writes in flight, a few batches ahead at most.
      if (loop.queued >= batchSize) await loop.room(batchSize);
    }
    await loop.drain();
  } catch (err) {
    throw replayFailed(err, options.db);
  } finally {
    await loop.stop();
    await iter.close();
  }
  const stats = loop.stats;
  result.messages = stats.applied;
  result.inserted = stats.inserted;
  result.skipped = stats.skipped;
  result.rejected = stats.rejected;
  result.quarantined = stats.quarantined;
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

/** A write error of replay, as one line. */
function replayFailed(err: unknown, db: ProjectionDb): unknown {
  if (!(err instanceof Error) || err instanceof ProjectionUnavailableError || !("code" in err)) return err;
  const where = db.kind === "pglite" ? "the embedded database" : "PostgreSQL";
  return new ProjectionUnavailableError(`replay stopped: ${where} failed: ${describeDbError(err)}`, {
    cause: err,
  });
}

/** A progress bar on a terminal; otherwise a plain line every 10%. */
function progressReporter(io: CommandIO, label: string): (done: number, total: number) => void {
  let lastDecile = -1;
  return (done, total) => {
    const ratio = total === 0 ? 1 : done / total;
    if (io.isTTY) {
      const width = 30;
      const filled = Math.round(ratio * width);
      io.err(
        `\r${label} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${(ratio * 100).toFixed(0).padStart(3)}% ${done.toLocaleString("en-US")}/${total.toLocaleString("en-US")}${done >= total ? "\n" : ""}`,
      );
    } else {
      const decile = Math.floor(ratio * 10);
      if (decile > lastDecile) {
        lastDecile = decile;
        io.err(`${label}: ${done}/${total} (${Math.round(ratio * 100)}%)\n`);
      }
    }
  };
}

function summary(r: ReplayResult): string {
  const rate = r.seconds > 0 ? Math.round(r.messages / r.seconds).toLocaleString("en-US") : "-";
  if (r.messages === 0) return `${r.stream}: nothing to replay\n`;
  return (
    `${r.stream}: seq ${r.firstSeq}..${r.lastSeq}, ${r.messages.toLocaleString("en-US")} messages, ` +
    `${r.inserted.toLocaleString("en-US")} rows inserted, ${(r.messages - r.inserted - r.skipped - r.rejected - r.quarantined).toLocaleString("en-US")} already present, ` +
    `${r.skipped} skipped (duplicates of stored events), ${r.rejected} rejected (invalid messages), ` +
    (r.quarantined > 0 ? `${r.quarantined} quarantined (refused by the database), ` : "") +
    `${r.seconds.toFixed(1)} s (${rate}/s)\n`
  );
}

/** Replays each stream kind in turn, printing a summary line per stream; the messages applied. */
async function replayKinds(
  kinds: StreamKind[],
  o: {
    nc: NatsConnection;
    db: ProjectionDb;
    n: Names;
    io: CommandIO;
    fromSeq: number | undefined;
    batchSize: number | undefined;
  },
): Promise<number> {
  let total = 0;
  for (const kind of kinds) {
    const stream = kind === "events" ? o.n.eventsStream : o.n.timelineStream;
    const r = await replayStream({
      nc: o.nc,
      db: o.db,
      kind,
      stream,
      ...(o.fromSeq !== undefined ? { fromSeq: o.fromSeq } : {}),
      ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
      onProgress: progressReporter(o.io, `replay ${stream}`),
    });
    total += r.messages;
    o.io.out(summary(r));
  }
  return total;
}

export const replayCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: {
        stream: { type: "string" },
        "from-seq": { type: "string" },
        rebuild: { type: "boolean", default: false },
        batch: { type: "string" },
      },
    });
    const kinds: StreamKind[] =
      values.stream === undefined
        ? ["events", "timeline"]
        : values.stream === "events" || values.stream === "timeline"
          ? [values.stream]
          : [];
    if (kinds.length === 0) throw new UsageError(`--stream must be events or timeline, got ${values.stream}`);
    const fromSeq = intOption(values["from-seq"], "from-seq");
    const batchSize = intOption(values.batch, "batch", 1, 50_000);
    if (values.rebuild && (values.stream !== undefined || fromSeq !== undefined))
      throw new UsageError(
        "--rebuild drops every projection table, so it replays every stream from the start",
      );

    const { config, nc, names: n } = await connectFromEnv(io, "geode-replay");
    let db: ProjectionDb | undefined;
    try {
      db = await openProjectionFromEnv(config, "geode replay", !values.rebuild);
      if (values.rebuild) {
        io.err(`dropping the projection tables of namespace ${n.ns}\n`);
        // The projection's tables only: the notary's audit tables of the schema stay.
        await dropProjectionTables(db.root, n.ns);
        await db.migrate();
      }
      // Loaded into empty tables on PostgreSQL: each secondary index is built once at the end
      // instead of updated row by row (made again below also when the replay fails, and by any
      // later migration should this process be killed). Here only, never in a service's start:
      // building an index locks its table against writers.
      const bulk = values.rebuild && (await db.server()) === "postgres";
      if (bulk) await dropSecondaryIndexes(db.root, n.ns);
      let total: number;
      try {
        total = await replayKinds(kinds, { nc, db, n, io, fromSeq, batchSize });
      } finally {
        if (bulk) await ensureSecondaryIndexes(db.root, n.ns);
      }
      io.out(
        `replay done: ${total.toLocaleString("en-US")} messages applied to schema ${n.pgSchema}${values.rebuild ? " (rebuilt)" : ""}\n`,
      );
      return 0;
    } finally {
      await db?.close();
      await nc.drain();
    }
  },
};
