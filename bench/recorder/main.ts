/**
 * Recorder benchmark (`pnpm bench recorder`): in one run, on a unique namespace,
 *   1. the floor: raw multi-row INSERTs into a copy of activity_events (pg, no NATS, no decode);
 *   2. end to end: N events published while the activity-recorder (a separate process) runs,
 *      timed from the first publish to the last row committed;
 *   3. replay: `geode replay --rebuild` of the same stream.
 */
import { randomUUID } from "node:crypto";
import { RuntimeEventBus } from "@geode/bus";
import { runCli } from "@geode/cli";
import { names as buildNames } from "@geode/contracts";
import { openProjectionDb } from "@geode/projection";
import {
  cleanupNamespace,
  DEFAULT_DATABASE_URL,
  DEFAULT_NATS_URL,
  spawnService,
  uniqueNamespace,
} from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import pg from "pg";
import { fmtRate, progress, table } from "../lib/stats.js";

const N = Number(process.env["BENCH_EVENTS"] ?? 100_000);
const BATCH = Number(process.env["BENCH_BATCH"] ?? 1_000);
const natsUrl = process.env["NATS_URL"] || DEFAULT_NATS_URL;
const databaseUrl = process.env["DATABASE_URL"] || DEFAULT_DATABASE_URL;
const ns = uniqueNamespace("bench");
const n = buildNames(ns);
const nc = await connect({ servers: natsUrl });
const jsm = await jetstreamManager(nc);
const projection = await openProjectionDb({ ns, databaseUrl });

const correlation = (i: number) => ({
  session_id: `s-${i % 97}`,
  turn_id: `t-${i % 1009}`,
  step_id: `st-${i % 7}`,
  run_id: "",
  session_generation: 1,
  verify_attempt: 0,
  tool_call_id: `tc-${i}`,
  llm_call_id: `lc-${i % 13}`,
  llm_attempt_id: "la-0",
});
const payload = (i: number) => ({
  tool_name: "fs.read",
  duration_ms: 12.5,
  has_error: false,
  bytes: i * 7,
  note: "ok",
});

async function countActivity(): Promise<number> {
  const r = await projection.db
    .selectFrom("activity_events")
    .select((eb) => eb.fn.countAll().as("n"))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

const rows: Array<[string, string, string]> = [];
try {
  // 1. Floor: the same table shape and indexes, plain multi-row VALUES, one transaction per batch.
  progress(`floor: ${N.toLocaleString("en-US")} rows, multi-row INSERT of ${BATCH}`);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query(`create table "${ns}".floor_events (like "${ns}".activity_events including all)`);
  const cols = [
    "stream_seq",
    "event_id",
    "event",
    "ts",
    "source",
    "session_id",
    "turn_id",
    "step_id",
    "run_id",
    "session_generation",
    "verify_attempt",
    "tool_call_id",
    "llm_call_id",
    "llm_attempt_id",
    "retention_bucket",
    "payload",
  ];
  const t0 = performance.now();
  for (let start = 0; start < N; start += BATCH) {
    const params: unknown[] = [];
    const tuples: string[] = [];
    for (let i = start; i < Math.min(N, start + BATCH); i++) {
      const c = correlation(i);
      const v = [
        i + 1,
        randomUUID(),
        "tool_exec_ended",
        Date.now(),
        "bench",
        c.session_id,
        c.turn_id,
        c.step_id,
        c.run_id,
        c.session_generation,
        c.verify_attempt,
        c.tool_call_id,
        c.llm_call_id,
        c.llm_attempt_id,
        "ops",
        JSON.stringify(payload(i)),
      ];
      tuples.push(`(${v.map((_, k) => `$${params.length + k + 1}`).join(",")})`);
      params.push(...v);
    }
    await client.query("begin");
    await client.query(
      `insert into "${ns}".floor_events (${cols.join(",")}) values ${tuples.join(",")}`,
      params,
    );
    await client.query("commit");
  }
  const floorRate = N / ((performance.now() - t0) / 1000);
  await client.query(`drop table "${ns}".floor_events`);
  await client.end();
  rows.push([
    "raw Postgres multi-row insert (floor)",
    fmtRate(floorRate),
    `${BATCH} rows per INSERT, 1 tx each`,
  ]);

  // 2. End to end: the recorder as its own process, events published while it runs.
  const recorderEnv = {
    NATS_URL: natsUrl,
    DATABASE_URL: databaseUrl,
    GEODE_NAMESPACE: ns,
    GEODE_RECORDER_BATCH_SIZE: String(BATCH),
    LOG_LEVEL: "warn",
  };
  const untilRows = async (count: number) => {
    while ((await countActivity()) < count) await new Promise((r) => setTimeout(r, 20));
    return performance.now();
  };
  const untilConsuming = async () => {
    for (;;) {
      try {
        await jsm.consumers.info(n.eventsStream, "activity-recorder");
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  progress("end to end: starting activity-recorder");
  let recorder = spawnService("services/activity-recorder/src/main.ts", recorderEnv);
  try {
    const bus = await RuntimeEventBus.create({ nc, names: n, source: "bench" });
    await untilConsuming();
    progress(`end to end: publishing ${N.toLocaleString("en-US")} events`);
    const t1 = performance.now();
    const WINDOW = 2_000;
    let failed = 0;
    for (let start = 0; start < N; start += WINDOW) {
      const batch = [];
      for (let i = start; i < Math.min(N, start + WINDOW); i++)
        batch.push(bus.emit("tool_exec_ended", payload(i), correlation(i)));
      failed += (await Promise.all(batch)).filter((e) => e === null).length;
    }
    const published = performance.now();
    if (failed > 0) throw new Error(`${failed} events not published`);
    const done = await untilRows(N);
    rows.push([
      "publish (RuntimeEventBus.emit, 2,000 in flight)",
      fmtRate(N / ((published - t1) / 1000)),
      "JetStream acked, no recorder cost",
    ]);
    rows.push([
      "end to end: publish → committed rows",
      fmtRate(N / ((done - t1) / 1000)),
      `${N.toLocaleString("en-US")} events; rows lag the last publish by ${((done - published) / 1000).toFixed(2)} s`,
    ]);

    // 2b. The recorder alone: a fresh projection and consumer, the whole stream as backlog.
    await recorder.stop("SIGTERM");
    progress("recorder backlog: drop projection and consumer, restart the recorder");
    await jsm.consumers.delete(n.eventsStream, "activity-recorder");
    await projection.root.schema.dropSchema(ns).cascade().execute();
    await projection.migrate();
    const t3 = performance.now();
    recorder = spawnService("services/activity-recorder/src/main.ts", recorderEnv);
    const drained = await untilRows(N);
    rows.push([
      "recorder alone: backlog → committed rows",
      fmtRate(N / ((drained - t3) / 1000)),
      `includes process start (tsx), batch ${BATCH}`,
    ]);
  } finally {
    await recorder.stop("SIGTERM");
  }

  // 3. Replay: drop the projection, rebuild it from the stream.
  progress("replay: geode replay --rebuild");
  let out = "";
  const t2 = performance.now();
  const code = await runCli(["replay", "--rebuild"], {
    out: (t) => {
      out += t;
    },
    err: () => undefined,
    env: { ...process.env, NATS_URL: natsUrl, DATABASE_URL: databaseUrl, GEODE_NAMESPACE: ns },
    isTTY: false,
  });
  const replaySeconds = (performance.now() - t2) / 1000;
  if (code !== 0) throw new Error(`replay failed: ${out}`);
  const replayed = await countActivity();
  if (replayed !== N) throw new Error(`replay produced ${replayed} rows, expected ${N}`);
  rows.push([
    "replay --rebuild (ordered consumer → rows)",
    fmtRate(N / replaySeconds),
    "includes drop + migrate",
  ]);
} finally {
  await projection.close();
  await cleanupNamespace(jsm, ns, databaseUrl);
  await nc.close();
}

process.stdout.write(`${table(["what", "rate", "notes"], rows)}\n`);
