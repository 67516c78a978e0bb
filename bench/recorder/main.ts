/**
 * Recorder benchmark (`pnpm bench recorder`): in one run, on a unique namespace,
 *   1. the floors: raw idempotent batch inserts into a copy of activity_events (pg, no NATS, no
 *      decode) as COPY (through a staging table on conflict), COPY through a staging table,
 *      VALUES, unnest and json_to_recordset, on one and on two connections;
 *   2. end to end: N events published while the activity-recorder (a separate process) runs,
 *      timed from the first publish to the last row committed;
 *   2c. the NATS side of its floor: a bare consumer that only takes and acks the backlog (peer.ts);
 *   3. replay: `geode replay --rebuild` of the same stream.
 * The recorder process's CPU per event (end to end, backlog; target ≤ 15 µs) and the bare
 * consumer's come from their threads' on-CPU time.
 */
import { randomUUID } from "node:crypto";
import { cpus } from "node:os";
import { RuntimeEventBus } from "@geode/bus";
import { runCli } from "@geode/cli";
import { names as buildNames, RECORDER_CONSUMER } from "@geode/contracts";
import { copyRows, openProjectionDb, stageAndInsert } from "@geode/projection";
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
import { machineBusy, processCpuUs, processesCpuMs } from "../lib/cpu-time.js";
import { fmtLoad, fmtRate, progress, table } from "../lib/stats.js";

const N = Number(process.env["BENCH_EVENTS"] ?? 100_000);
const BATCH = Number(process.env["BENCH_BATCH"] ?? 1_000);
const WRITERS = Number(process.env["BENCH_WRITERS"] ?? 2);
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

/** activity_events' columns and types, for the floors' plain SQL. */
const FLOOR_COLUMNS = [
  ["stream_seq", "bigint"],
  ["event_id", "text"],
  ["event", "text"],
  ["ts", "bigint"],
  ["source", "text"],
  ["session_id", "text"],
  ["turn_id", "text"],
  ["step_id", "text"],
  ["run_id", "text"],
  ["session_generation", "integer"],
  ["verify_attempt", "integer"],
  ["tool_call_id", "text"],
  ["llm_call_id", "text"],
  ["llm_attempt_id", "text"],
  ["retention_bucket", "text"],
  ["payload", "jsonb"],
] as const;

async function countActivity(): Promise<number> {
  const r = await projection.db
    .selectFrom("activity_events")
    .select((eb) => eb.fn.countAll().as("n"))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

const rows: Array<[string, string, string]> = [];
let floorBest = -1;
/** Machine CPU (all processes, µs) per event or row of a phase, by phase; see the cpu line. */
const cpuPerEvent = new Map<string, number>();
/** What the cores allow of the end-to-end target (set by that phase). */
let e2eBound: string | undefined;
/** How busy the machine's cores were over a span: is a rate bound by CPU or by waiting? */
const busyNote = (span: ReturnType<typeof machineBusy>, rate: number, phase: string) => {
  const b = span.end();
  if (!b) return "";
  cpuPerEvent.set(phase, (b.busyCores / rate) * 1e6);
  return `; cores busy ${b.busyCores.toFixed(2)} of ${b.cores}`;
};
/** CPU per event or row of a phase (µs), by process: Postgres, nats-server, and the phase's own. */
const byProcess = new Map<string, { postgres: number; nats: number; own: number }>();
/** Starts a phase's count of Postgres's and nats-server's CPU; its end takes the phase's own. */
const processSpan = () => {
  const pg0 = processesCpuMs("postgres");
  const nats0 = processesCpuMs("nats-server");
  return (phase: string, events: number, ownMs: number | undefined) => {
    const pg1 = processesCpuMs("postgres");
    const nats1 = processesCpuMs("nats-server");
    if (pg0 === undefined || pg1 === undefined || nats0 === undefined || nats1 === undefined) return;
    if (ownMs === undefined) return;
    const us = (ms: number) => (ms * 1000) / events;
    byProcess.set(phase, { postgres: us(pg1 - pg0), nats: us(nats1 - nats0), own: us(ownMs) });
  };
};
const cpuMs = (since: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};
const targets: string[] = [];
/** The recorder process's CPU per event (µs), by phase: end to end and backlog. */
const recorderCpu = new Map<string, number>();
const CPU_TARGET_US = 15;
const target = (what: string, measured: number, min: number) =>
  targets.push(
    `target: ${what}: ${measured.toFixed(2)} (target ≥ ${min.toFixed(2)}): ${measured >= min ? "met" : "not met"}`,
  );
try {
  // 1. Floors: the same table shape and indexes, no NATS, no decoding, rows built beforehand, one
  // transaction per batch; each plain-Postgres method, on one connection and on two (the recorder
  // and replay keep two batches in flight), so every row below compares with the best of them.
  const floorRows = Array.from({ length: N }, (_, i) => {
    const c = correlation(i);
    return [
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
    ] as unknown[];
  });
  const clients = [
    new pg.Client({ connectionString: databaseUrl }),
    new pg.Client({ connectionString: databaseUrl }),
  ];
  for (const c of clients) await c.connect();
  const floorTable = `"${ns}".floor_events`;
  const cols = FLOOR_COLUMNS.map(([c]) => c).join(",");
  const methods: Record<string, (rows: unknown[][]) => [string, unknown[]]> = {
    "VALUES ($1,…),(…)": (rows) => {
      const params: unknown[] = [];
      const tuples = rows.map((v) => {
        const t = `(${v.map((_, k) => `$${params.length + k + 1}`).join(",")})`;
        params.push(...v);
        return t;
      });
      return [
        `insert into ${floorTable} (${cols}) values ${tuples.join(",")} on conflict do nothing`,
        params,
      ];
    },
    "unnest($1::bigint[], …)": (rows) => [
      `insert into ${floorTable} (${cols}) select * from unnest(${FLOOR_COLUMNS.map(([, t], k) => `$${k + 1}::${t}[]`).join(",")}) on conflict do nothing`,
      FLOOR_COLUMNS.map((_, k) => rows.map((r) => r[k])),
    ],
    // What the recorder sent before COPY, and still sends to PGlite.
    "json_to_recordset($1)": (rows) => [
      `insert into ${floorTable} (${cols}) select * from json_to_recordset($1::json) as x(${FLOOR_COLUMNS.map(([c, t]) => `${c} ${t}`).join(",")}) on conflict do nothing`,
      [
        JSON.stringify(
          rows.map((r) =>
            Object.fromEntries(
              FLOOR_COLUMNS.map(([c, t], k) => [c, t === "jsonb" ? JSON.parse(String(r[k])) : r[k]]),
            ),
          ),
        ),
      ],
    ],
  };
  // What the recorder does on PostgreSQL (packages/projection's copy writer): COPY straight into
  // the table under a savepoint, through a staging table and ON CONFLICT DO NOTHING when a row is
  // already there (never here: these are new rows); and the staging path alone, what every batch
  // would cost if each had a conflict.
  const floorColumns = FLOOR_COLUMNS as unknown as Array<[string, string]>;
  const asObjects = (rows: unknown[][]) =>
    rows.map((r) =>
      Object.fromEntries(
        FLOOR_COLUMNS.map(([c, t], k) => [c, t === "jsonb" ? JSON.parse(String(r[k])) : r[k]]),
      ),
    );
  const direct: Record<string, (c: pg.Client, rows: unknown[][]) => Promise<unknown>> = {
    "COPY (staging on conflict)": (c, rows) => copyRows(c, ns, "floor_events", asObjects(rows), floorColumns),
    "COPY → staging → INSERT ON CONFLICT": (c, rows) =>
      stageAndInsert(c, ns, "floor_events", asObjects(rows), floorColumns),
  };
  for (const [method, build] of Object.entries(methods))
    direct[method] = (c, rows) => {
      const [text, params] = build(rows);
      return c.query(text, params);
    };
  const floors: number[] = [];
  for (const [method, write] of Object.entries(direct))
    for (const conns of [1, 2]) {
      progress(
        `floor: ${N.toLocaleString("en-US")} rows, ${method}, ${BATCH} per tx, ${conns} connection(s)`,
      );
      await clients[0]!.query(`create table ${floorTable} (like "${ns}".activity_events including all)`);
      let next = 0;
      const busy = machineBusy();
      const processes = processSpan();
      const benchCpu = process.cpuUsage();
      const t0 = performance.now();
      await Promise.all(
        clients.slice(0, conns).map(async (c) => {
          while (next < N) {
            const start = next;
            next += BATCH;
            await c.query("begin");
            await write(c, floorRows.slice(start, start + BATCH));
            await c.query("commit");
          }
        }),
      );
      const rate = N / ((performance.now() - t0) / 1000);
      processes(`floor ${floors.length}`, N, cpuMs(benchCpu));
      await clients[0]!.query(`drop table ${floorTable}`);
      floors.push(rate);
      rows.push([
        `floor: ${method}`,
        fmtRate(rate),
        `${BATCH} rows per tx, ${conns} connection${conns > 1 ? "s" : ""}${busyNote(busy, rate, `floor ${floors.length - 1}`)}`,
      ]);
    }
  for (const c of clients) await c.end();
  const bestFloor = Math.max(...floors);
  floorBest = floors.indexOf(bestFloor);
  const ofFloor = (rate: number) => `${Math.round((rate / bestFloor) * 100)}% of the best floor`;

  // 2. End to end: the recorder as its own process, events published while it runs.
  const recorderEnv = {
    NATS_URL: natsUrl,
    DATABASE_URL: databaseUrl,
    GEODE_NAMESPACE: ns,
    GEODE_RECORDER_BATCH_SIZE: String(BATCH),
    GEODE_RECORDER_WRITERS: String(WRITERS),
    LOG_LEVEL: "warn",
  };
  // Polls the recorder's offset (one row), not count(*): a scan of the growing table every few
  // milliseconds would take Postgres time from the recorder being measured.
  const untilRows = async (count: number) => {
    const offset = async () =>
      Number(
        (
          await projection.db
            .selectFrom("projection_offsets")
            .select("last_seq")
            .where("consumer", "=", RECORDER_CONSUMER)
            .where("stream", "=", n.eventsStream)
            .executeTakeFirst()
        )?.last_seq ?? 0,
      );
    while ((await offset()) < count) await new Promise((r) => setTimeout(r, 10));
    // The offset is a high-water mark: a batch below it may still be committing.
    while ((await countActivity()) < count) await new Promise((r) => setTimeout(r, 10));
    return performance.now();
  };
  const untilConsuming = async () => {
    for (;;) {
      try {
        await jsm.consumers.info(n.eventsStream, RECORDER_CONSUMER);
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
    const e2eBusy = machineBusy();
    const e2eCpu0 = processCpuUs(recorder.child.pid ?? 0);
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
    const e2eCpu1 = processCpuUs(recorder.child.pid ?? 0);
    if (e2eCpu0 !== undefined && e2eCpu1 !== undefined)
      recorderCpu.set("end to end", (e2eCpu1 - e2eCpu0) / N);
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
    rows.push([
      "",
      "",
      `batch ${BATCH}, ${WRITERS} writers; ${ofFloor(N / ((done - t1) / 1000))}${busyNote(e2eBusy, N / ((done - t1) / 1000), "end to end")}`,
    ]);
    target("end to end / publish rate of this run", (published - t1) / (done - t1), 0.95);
    // Publisher, nats-server, recorder and Postgres share the cores: at the machine CPU each event
    // cost in this phase, the rows cannot all be in before that CPU time spread over every core.
    const e2eCpu = cpuPerEvent.get("end to end");
    if (e2eCpu !== undefined) {
      const soonest = (N * e2eCpu) / (cpus().length * 1e6);
      e2eBound = `end to end: machine CPU per event, all processes (the publisher's too), ${e2eCpu.toFixed(1)} µs; with the cores saturated the last row could be in ${soonest.toFixed(2)} s after the first publish at the soonest (the publishing took ${((published - t1) / 1000).toFixed(2)} s): at most ${Math.min(1, (published - t1) / 1000 / soonest).toFixed(2)} of the publish rate`;
    }

    // 2b. The recorder alone: a fresh projection and consumer, the whole stream as backlog.
    await recorder.stop("SIGTERM");
    progress("recorder backlog: drop projection and consumer, restart the recorder");
    await jsm.consumers.delete(n.eventsStream, RECORDER_CONSUMER);
    await projection.root.schema.dropSchema(ns).cascade().execute();
    await projection.migrate();
    recorder = spawnService("services/activity-recorder/src/main.ts", recorderEnv);
    await untilConsuming();
    const backlogBusy = machineBusy();
    const backlogProcesses = processSpan();
    const cpu0 = processCpuUs(recorder.child.pid ?? 0);
    const t3 = performance.now();
    const drained = await untilRows(N);
    const cpu1 = processCpuUs(recorder.child.pid ?? 0);
    backlogProcesses(
      "backlog",
      N,
      cpu0 === undefined || cpu1 === undefined ? undefined : (cpu1 - cpu0) / 1000,
    );
    if (cpu0 !== undefined && cpu1 !== undefined) recorderCpu.set("backlog", (cpu1 - cpu0) / N);
    rows.push([
      "recorder alone: backlog → committed rows",
      fmtRate(N / ((drained - t3) / 1000)),
      `from its consumer's creation; ${ofFloor(N / ((drained - t3) / 1000))}${busyNote(backlogBusy, N / ((drained - t3) / 1000), "backlog")}`,
    ]);
    target("recorder alone (backlog) / best floor", N / ((drained - t3) / 1000) / bestFloor, 0.6);
  } finally {
    await recorder.stop("SIGTERM");
  }

  // 2c. The NATS side of the recorder's floor: a bare consumer that only takes and acks the
  // backlog (peer.ts), its own process's CPU per message.
  progress("bare consumer: the backlog taken and acked, nothing else");
  const bare = spawnService("bench/recorder/peer.ts", { NATS_URL: natsUrl }, [
    n.eventsStream,
    "bench_bare",
    String(N),
    String(BATCH),
  ]);
  try {
    await bare.waitForOutput(/ready/, 60_000);
    const bare0 = processCpuUs(bare.child.pid ?? 0);
    const tb = performance.now();
    await bare.waitForOutput(/done/, 120_000);
    const bareRate = N / ((performance.now() - tb) / 1000);
    const bare1 = processCpuUs(bare.child.pid ?? 0);
    if (bare0 !== undefined && bare1 !== undefined)
      recorderCpu.set("floor: a bare consumer acking each message", (bare1 - bare0) / N);
    rows.push([
      "bare consumer: backlog taken and acked",
      fmtRate(bareRate),
      "no decoding, no database (the NATS client's share)",
    ]);
  } finally {
    await bare.stop("SIGTERM");
  }

  // 3. Replay: drop the projection, rebuild it from the stream.
  progress("replay: geode replay --rebuild");
  let out = "";
  const replayBusy = machineBusy();
  const replayProcesses = processSpan();
  const replayCpu = process.cpuUsage();
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
  const replayCpuUs = process.cpuUsage(replayCpu);
  replayProcesses("replay", N, (replayCpuUs.user + replayCpuUs.system) / 1000);
  const replayNote = busyNote(replayBusy, N / replaySeconds, "replay");
  if (code !== 0) throw new Error(`replay failed: ${out}`);
  const replayed = await countActivity();
  if (replayed !== N) throw new Error(`replay produced ${replayed} rows, expected ${N}`);
  rows.push([
    "replay --rebuild (ordered consumer → rows)",
    fmtRate(N / replaySeconds),
    `includes drop + migrate; ${ofFloor(N / replaySeconds)}${replayNote}`,
  ]);
  rows.push([
    "",
    "",
    `replay's process CPU ${((replayCpuUs.user + replayCpuUs.system) / N).toFixed(1)} µs per event`,
  ]);
  target("replay --rebuild / best floor", N / replaySeconds / bestFloor, 0.6);
} finally {
  await projection.close();
  await cleanupNamespace(jsm, ns, databaseUrl);
  await nc.close();
}

process.stdout.write(`${table(["what", "rate", "notes"], rows)}\n\n`);
// With every core busy in both phases, rates stand in the inverse ratio of the machine CPU each
// event costs: this bounds what the recorder can reach of the floor here, whatever it does.
const best = cpuPerEvent.get(`floor ${floorBest}`);
const [backlogCpu, replayCpu] = [cpuPerEvent.get("backlog"), cpuPerEvent.get("replay")];
const cpuLine =
  best !== undefined && backlogCpu !== undefined && replayCpu !== undefined
    ? [
        `machine CPU per event, all processes: best floor ${best.toFixed(1)} µs, backlog ${backlogCpu.toFixed(1)} µs, replay ${replayCpu.toFixed(1)} µs; ` +
          `with the cores saturated, at most ${(best / backlogCpu).toFixed(2)} (backlog) and ${(best / replayCpu).toFixed(2)} (replay) of the best floor`,
      ]
    : [];
// The same by process: what the recorder's and replay's own work may cost for 0.60 of the floor,
// when everything else an event costs (Postgres, nats-server, the rest) stays as measured.
const [floorBy, backlogBy, replayBy] = [
  byProcess.get(`floor ${floorBest}`),
  byProcess.get("backlog"),
  byProcess.get("replay"),
];
const share = (by: { postgres: number; nats: number; own: number }, machine: number) =>
  `Postgres ${by.postgres.toFixed(1)}, nats-server ${by.nats.toFixed(1)}, its own ${by.own.toFixed(1)}, the rest ${Math.max(0, machine - by.postgres - by.nats - by.own).toFixed(1)}`;
const allowed = (by: { own: number }, machine: number) =>
  best === undefined ? Number.NaN : best / 0.6 - (machine - by.own);
if (
  floorBy &&
  backlogBy &&
  replayBy &&
  best !== undefined &&
  backlogCpu !== undefined &&
  replayCpu !== undefined
)
  cpuLine.push(
    `CPU per event by process (µs): best floor: ${share(floorBy, best)}; backlog: ${share(backlogBy, backlogCpu)}; replay: ${share(replayBy, replayCpu)}`,
    `for 0.60 of the best floor with the cores saturated, the rest as measured, the recorder's own CPU could be at most ${allowed(backlogBy, backlogCpu).toFixed(1)} µs per event (it took ${backlogBy.own.toFixed(1)}) and replay's ${allowed(replayBy, replayCpu).toFixed(1)} µs (it took ${replayBy.own.toFixed(1)})`,
  );
const cpuTargetLines = [...recorderCpu].map(([phase, us]) =>
  phase.startsWith("floor")
    ? `CPU per event, ${phase}: ${us.toFixed(1)} µs`
    : `CPU per event, the recorder process, ${phase}: ${us.toFixed(1)} µs (target ≤ ${CPU_TARGET_US} µs): ${us <= CPU_TARGET_US ? "met" : "not met"}`,
);
process.stdout.write(
  `${[
    ...cpuTargetLines,
    ...targets,
    ...(e2eBound ? [e2eBound] : []),
    ...cpuLine,
    `events: ${N.toLocaleString("en-US")}; load average at the end: ${fmtLoad()}`,
  ].join("\n")}\n`,
);
