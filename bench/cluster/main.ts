/**
 * `pnpm bench cluster`: scale-out on a three-node JetStream cluster (infra/cluster, every stream and
 * bucket R3), in one run:
 *   1. hook throughput at 64 callers (UserPromptSubmit, one handler process) with one dispatcher
 *      replica, two, and one again (interleaved: the repeat shows the drift of the machine);
 *   2. recorder rate with one and with two activity-recorder replicas: a backlog of events is
 *      published while Postgres holds the projection table locked (the replicas are up, warm and
 *      waiting), then the lock goes and the time to the last row committed is the drain rate.
 * Ratios are against the one-replica case of the same run.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { createHookClient, RuntimeEventBus } from "@geode/bus";
import { names as buildNames, correlation, HookName } from "@geode/contracts";
import { openProjectionDb } from "@geode/projection";
import {
  DEFAULT_DATABASE_URL,
  type SpawnedProcess,
  spawnService,
  uniqueNamespace,
  waitFor,
} from "@geode/testing";
import { connect } from "@nats-io/transport-node";
import pg from "pg";
import { startCluster } from "../../infra/cluster/cluster.js";
import { fmtRate, measureThroughput, progress, table } from "../lib/stats.js";

const CALLERS = 64;
const HOOK_TOTAL = Number(process.env["BENCH_TOTAL"] ?? 6_000);
const EVENTS = Number(process.env["BENCH_EVENTS"] ?? 20_000);
const databaseUrl = process.env["DATABASE_URL"] || DEFAULT_DATABASE_URL;

process.env["GEODE_STREAM_REPLICAS"] = "3";
progress("starting a three-node JetStream cluster");
const cluster = await startCluster();
const nc = await connect({ servers: cluster.url.split(",") });
const procs: SpawnedProcess[] = [];
const namespaces: string[] = [];
const spawn = async (
  entry: string,
  ns: string,
  ready: RegExp,
  args: string[] = [],
  extra: Record<string, string> = {},
) => {
  const p = spawnService(
    entry,
    {
      NATS_URL: cluster.url,
      GEODE_NAMESPACE: ns,
      DATABASE_URL: databaseUrl,
      GEODE_STREAM_REPLICAS: "3",
      LOG_LEVEL: "info",
      ...extra,
    },
    args,
  );
  procs.push(p);
  await p.waitForOutput(ready, 90_000);
  return p;
};

const runsDir = mkdtempSync(path.join(tmpdir(), "geode-bench-runs-"));
const rows: string[][] = [];
try {
  // 1. Hooks.
  const hookNs = uniqueNamespace("bench");
  namespaces.push(hookNs);
  const hn = buildNames(hookNs);
  await spawn("bench/hooks/handler.ts", hookNs, /ready/, ["handler", "h1", "1"]);
  await spawn("services/hook-dispatcher/src/main.ts", hookNs, /hook-dispatcher started/);
  const hooks = createHookClient(nc, hn);
  const corr = correlation({ session_id: "bench", turn_id: "t" });
  const invoke = () => hooks.invoke(HookName.UserPromptSubmit, { user_input: "hello" }, corr);
  await waitFor(async () => (await invoke().catch(() => null))?.decision_sources.length === 1, 60_000, 100);
  const measureHooks = async (label: string) => {
    progress(`hooks, ${CALLERS} callers: ${label}`);
    await measureThroughput(Math.min(1_000, HOOK_TOTAL), CALLERS, invoke); // warm-up
    return measureThroughput(HOOK_TOTAL, CALLERS, invoke);
  };
  const one = await measureHooks("1 dispatcher");
  const second = await spawn("services/hook-dispatcher/src/main.ts", hookNs, /hook-dispatcher started/);
  // The second replica has joined the queue group once it has seen the handler and answered.
  await new Promise((r) => setTimeout(r, 2_000));
  const two = await measureHooks("2 dispatchers");
  await second.stop("SIGTERM");
  const oneAgain = await measureHooks("1 dispatcher again");
  const hookBase = (one + oneAgain) / 2;
  rows.push(
    [`hooks, ${CALLERS} callers`, "1 hook-dispatcher", fmtRate(one), (one / hookBase).toFixed(2)],
    [`hooks, ${CALLERS} callers`, "2 hook-dispatchers", fmtRate(two), (two / hookBase).toFixed(2)],
    [
      `hooks, ${CALLERS} callers`,
      "1 hook-dispatcher (again)",
      fmtRate(oneAgain),
      (oneAgain / hookBase).toFixed(2),
    ],
  );

  // 2. Recorder.
  let recorderBase = 0;
  for (const replicas of [1, 2]) {
    const ns = uniqueNamespace("bench");
    namespaces.push(ns);
    const n = buildNames(ns);
    progress(`recorder: ${replicas} replica(s) on ${ns}`);
    await Promise.all(
      Array.from({ length: replicas }, () =>
        spawn("services/activity-recorder/src/main.ts", ns, /activity-recorder consuming/, [], {
          GEODE_RUNS_DIR: runsDir,
        }),
      ),
    );
    const projection = await openProjectionDb({ ns, databaseUrl });
    const count = async () =>
      Number(
        (
          await projection.db
            .selectFrom("activity_events")
            .select((eb) => eb.fn.countAll().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      );
    // Hold the table so the backlog builds up in the stream while the replicas wait.
    const lock = new pg.Client({ connectionString: databaseUrl });
    await lock.connect();
    await lock.query("begin");
    await lock.query(`lock table "${ns}".activity_events in access exclusive mode`);
    const bus = await RuntimeEventBus.create({ nc, names: n, source: "bench" });
    progress(`recorder: publishing ${EVENTS.toLocaleString("en-US")} events`);
    for (let start = 0; start < EVENTS; start += 2_000) {
      const batch = [];
      for (let i = start; i < Math.min(EVENTS, start + 2_000); i++)
        batch.push(
          bus.emit(
            "tool_exec_ended",
            { i, note: "ok" },
            { session_id: `s-${i % 97}`, tool_call_id: randomUUID() },
          ),
        );
      const failed = (await Promise.all(batch)).filter((e) => e === null).length;
      if (failed > 0) throw new Error(`${failed} events not published`);
    }
    const t0 = performance.now();
    await lock.query("commit");
    await lock.end();
    while ((await count()) < EVENTS) await new Promise((r) => setTimeout(r, 20));
    const rate = EVENTS / ((performance.now() - t0) / 1000);
    if (replicas === 1) recorderBase = rate;
    rows.push([
      `recorder, ${EVENTS.toLocaleString("en-US")} events backlog`,
      `${replicas} activity-recorder${replicas > 1 ? "s" : ""}`,
      fmtRate(rate),
      (rate / recorderBase).toFixed(2),
    ]);
    await projection.close();
    for (const p of procs.splice(0)) await p.stop("SIGTERM", 10_000);
  }

  process.stdout.write(`${table(["work", "replicas", "rate", "× one replica"], rows)}\n\n`);
  process.stdout.write(
    `three nats-server nodes on loopback, R3 streams and buckets; ${HOOK_TOTAL} hook calls per run after 1,000 to warm up; hooks: × the mean of the two one-replica runs; the whole plane shares this machine's ${cpus().length} cores (load average ${loadavg()[0]?.toFixed(1)} at the end)\n`,
  );
} finally {
  for (const p of procs.reverse()) await p.stop("SIGTERM", 5_000);
  await nc.close();
  await cluster.stop();
  rmSync(runsDir, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  for (const ns of namespaces) await client.query(`drop schema if exists "${ns}" cascade`);
  await client.end();
}
