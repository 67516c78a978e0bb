/**
 * `pnpm bench hooks`: the raw NATS request/reply round trip (the floor) and hook invocations
 * through hook-dispatcher processes with 0, 1 and 3 handler processes (one dispatcher per case, in
 * a namespace of its own), in one run: sequential latency (median, p99), the cases taking turns 20
 * calls at a time, and throughput at 1, 16 and 64 concurrent callers, with ratios against the
 * floor (1 handler vs two raw round trips, 3 handlers vs four). A forwarder process that only
 * passes each request on to the echo responder once or three times shows the floor of any process
 * in the middle on this machine; the same forwarder publishing an audit event per echo call to
 * JetStream, as the dispatcher audits every handler call, the floor of any dispatcher that keeps
 * that guarantee. Then CPU per call (`measureCpu`): the dispatcher's and its handlers' on-CPU time
 * over the same calls, beside the audited forwarder's and the echo responder's, with the
 * dispatcher's against the forwarder's as the `CPU per call … N.NN ×` lines. `BENCH_OBSERVABILITY_ONLY=1`
 * measures metrics and span export on vs off instead (bench/hooks/observability.ts).
 */
import { randomBytes } from "node:crypto";
import { ensureBucket } from "@geode/bus";
import { correlation, names } from "@geode/contracts";
import { connectGeode, createHookClient, HookName } from "@geode/runtime";
import { cleanupNamespace, type SpawnedProcess, spawnService, waitFor } from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { CpuPerCall, listenerPid } from "../lib/cpu-time.js";
import {
  fmtLoad,
  fmtRate,
  fmtUs,
  type LatencySummary,
  measureThroughput,
  progress,
  summarize,
  table,
  warmThenInterleave,
} from "../lib/stats.js";

import { observabilityBench } from "./observability.js";

// BENCH_OBSERVABILITY_ONLY=1: only metrics + span export on vs off (bench/hooks/observability.ts).
if (process.env["BENCH_OBSERVABILITY_ONLY"]) {
  await observabilityBench();
  process.exit(0);
}

const SEQUENTIAL = Number(process.env["BENCH_N"] ?? 3_000);
const THROUGHPUT_TOTAL = Number(process.env["BENCH_TOTAL"] ?? 6_000);
const CONCURRENCY = [1, 16, 64];
const PER_ROUND = 20;
/** Calls per case and turn of the CPU phase (`BENCH_CPU_CALLS`), three turns. */
const CPU_CALLS = Number(process.env["BENCH_CPU_CALLS"] ?? 1_000);
const CPU_TURNS = 3;
/** The dispatcher's CPU per one-handler call against the audited forwarder's (issue 42). */
const CPU_TARGET = 1.3;
/**
 * Warm-up calls per case (`BENCH_WARMUP`). A service answers for hours; a fresh dispatcher and its
 * handlers are still young after 500 calls: their p99 / median and a hook call's ratio to the
 * audited forwarder settle only after a few thousand calls (docs/benchmarks.md).
 */
const WARMUP = Number(process.env["BENCH_WARMUP"] ?? 5_000);
/** 1 handler at 64 callers against the audited forwarder's, 1 round trip (issue 42). */
const RATE64_TARGET = 0.85;
/** p99 / median of each hook case (issue 42). */
const TAIL_TARGET = 4;

const run = randomBytes(3).toString("hex");
// One namespace per hook case, each with its own dispatcher, so the cases can take turns.
const nsOf = (handlers: number) => `bench_hooks_${handlers}_${run}`;
const natsUrl = process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
const conn = await connectGeode({ name: "bench-hooks" });
const procs: SpawnedProcess[] = [];
const spawn = async (entry: string, args: string[], ready: RegExp, extra: Record<string, string>) => {
  const p = spawnService(entry, { NATS_URL: natsUrl, LOG_LEVEL: "warn", ...extra }, args);
  procs.push(p);
  await p.waitForOutput(ready, 60_000);
  return p;
};

interface Row {
  label: string;
  seq: LatencySummary;
  rates: number[];
}

try {
  for (const n of [0, 1, 3]) await ensureBucket(conn.nc, names(nsOf(n)), "hookHandlers");
  const pids = new Map<string, number>();
  const pidOf = (p: SpawnedProcess) => p.child.pid ?? 0;
  pids.set(
    "echo",
    pidOf(await spawn("bench/hooks/handler.ts", ["echo"], /ready/, { GEODE_NAMESPACE: nsOf(0) })),
  );
  const echoSubject = `${nsOf(0)}.bench.echo`;
  const small = new TextEncoder().encode(JSON.stringify({ user_input: "hello" }));
  const rawCall = () => conn.nc.request(echoSubject, small, { timeout: 5_000 });
  pids.set(
    "forwarder",
    pidOf(await spawn("bench/hooks/handler.ts", ["forward"], /ready/, { GEODE_NAMESPACE: nsOf(0) })),
  );
  const forward =
    (times: number, audited = false) =>
    () =>
      conn.nc.request(`${nsOf(0)}.bench.${audited ? "forward-audited" : "forward"}.${times}`, small, {
        timeout: 5_000,
      });

  // h1 answers in the 1- and 3-handler namespaces, h2 and h3 in the 3-handler one.
  pids.set(
    "h1",
    pidOf(
      await spawn("bench/hooks/handler.ts", ["handler", "h1", "1", `${nsOf(1)},${nsOf(3)}`], /ready/, {}),
    ),
  );
  for (const h of ["h2", "h3"])
    pids.set(
      h,
      pidOf(await spawn("bench/hooks/handler.ts", ["handler", h, h.slice(1), nsOf(3)], /ready/, {})),
    );
  const corr = correlation({ session_id: "bench", turn_id: "t" });
  const invokers = new Map<number, () => Promise<unknown>>();
  for (const n of [0, 1, 3]) {
    const dispatcher = await spawn("services/hook-dispatcher/src/main.ts", [], /hook-dispatcher started/, {
      GEODE_NAMESPACE: nsOf(n),
      LOG_LEVEL: "info",
    });
    pids.set(`dispatcher ${n}`, pidOf(dispatcher));
    const hooks = createHookClient(conn.nc, names(nsOf(n)));
    const invoke = () => hooks.invoke(HookName.UserPromptSubmit, { user_input: "hello" }, corr);
    await waitFor(async () => (await invoke().catch(() => null))?.decision_sources.length === n, 30_000);
    invokers.set(n, invoke);
  }
  const cases: Array<[string, () => Promise<unknown>]> = [
    ["raw NATS request/reply", rawCall],
    ["hook, 0 handlers", invokers.get(0)!],
    ["hook, 1 handler", invokers.get(1)!],
    ["hook, 3 handlers", invokers.get(3)!],
    ["forwarder: 1 raw round trip through a process in the middle", forward(1)],
    ["forwarder: 3 raw round trips through a process in the middle", forward(3)],
    ["forwarder, 1 round trip, and its audit event to JetStream", forward(1, true)],
    ["forwarder, 3 round trips, and an audit event to JetStream for each", forward(3, true)],
  ];

  // The cases take turns, 20 calls each, so the machine's drift (the raw round trip moved by a
  // factor of two within minutes on this machine) hits the floor and the hooks alike.
  const { samples, rounds } = await warmThenInterleave(
    cases.map(([, fn]) => fn),
    { warmup: WARMUP, sequential: SEQUENTIAL, perRound: PER_ROUND },
  );
  const rows: Row[] = cases.map(([label], i) => ({ label, seq: summarize(samples[i]!), rates: [] }));
  const cpu = await measureCpu(
    [
      ["1 handler", invokers.get(1)!],
      ["audited forwarder, 1", forward(1, true)],
      ["3 handlers", invokers.get(3)!],
      ["audited forwarder, 3", forward(3, true)],
    ],
    pids,
  );
  for (const c of CONCURRENCY)
    for (const [i, [label, fn]] of cases.entries()) {
      progress(`${label}, ${c} caller${c > 1 ? "s" : ""}`);
      rows[i]!.rates.push(await measureThroughput(THROUGHPUT_TOTAL, c, fn));
    }
  const [raw, zero, one, three, fwd1, fwd3, audited1, audited3] = rows as [
    Row,
    Row,
    Row,
    Row,
    Row,
    Row,
    Row,
    Row,
  ];

  const floor = raw.seq.medianUs;
  process.stdout.write(
    `${table(
      ["case", "median", "p99", "×raw", ...CONCURRENCY.map((c) => `${c} caller${c > 1 ? "s" : ""}`)],
      rows.map((r) => [
        r.label,
        fmtUs(r.seq.medianUs),
        fmtUs(r.seq.p99Us),
        (r.seq.medianUs / floor).toFixed(2),
        ...r.rates.map(fmtRate),
      ]),
    )}\n\n`,
  );
  const ratio1 = one.seq.medianUs / (2 * floor);
  const ratio3 = three.seq.medianUs / (4 * floor);
  const floor1 = one.seq.medianUs / audited1.seq.medianUs;
  const floor3 = three.seq.medianUs / audited3.seq.medianUs;
  const at64 = CONCURRENCY.indexOf(64);
  const rate64 = one.rates[at64] ?? 0;
  const audited64 = audited1.rates[at64] ?? 0;
  const share64 = audited64 > 0 ? rate64 / audited64 : 0;
  const tail1 = one.seq.p99Us / one.seq.medianUs;
  const tail3 = three.seq.p99Us / three.seq.medianUs;
  const line = (what: string, measured: string, target: string, met: boolean) =>
    `target: ${what}: ${measured} (target ${target}): ${met ? "met" : "not met"}`;
  process.stdout.write(
    [
      line("1 handler median / audited forwarder, 1", floor1.toFixed(2), "≤ 1.10", floor1 <= 1.1),
      line("3 handlers median / audited forwarder, 3", floor3.toFixed(2), "≤ 1.15", floor3 <= 1.15),
      `1 handler median / 2 raw round trips: ${ratio1.toFixed(2)}`,
      `3 handlers median / 4 raw round trips: ${ratio3.toFixed(2)}`,
      line(
        "1 handler, 64 callers, one dispatcher / audited forwarder, 1 round trip",
        `${share64.toFixed(2)} × (${fmtRate(rate64)} against ${fmtRate(audited64)})`,
        `≥ ${RATE64_TARGET.toFixed(2)} ×`,
        share64 >= RATE64_TARGET,
      ),
      line(
        "p99 / median, the worse of 1 and 3 handlers",
        `${Math.max(tail1, tail3).toFixed(2)} (1 handler ${tail1.toFixed(2)}, 3 handlers ${tail3.toFixed(2)})`,
        `≤ ${TAIL_TARGET}`,
        Math.max(tail1, tail3) <= TAIL_TARGET,
      ),
      `floor of any process in the middle (a forwarder that only passes the request on): ${(fwd1.seq.medianUs / (2 * floor)).toFixed(2)} × 2 raw round trips, ${(fwd3.seq.medianUs / (4 * floor)).toFixed(2)} × 4; p99 / median ${(fwd1.seq.p99Us / fwd1.seq.medianUs).toFixed(2)}, raw ${(raw.seq.p99Us / floor).toFixed(2)}`,
      `floor with every handler call audited (the forwarder, and one extension_invoked event per echo call published to the events stream as the dispatcher does): ${(audited1.seq.medianUs / (2 * floor)).toFixed(2)} × 2 raw round trips, ${(audited3.seq.medianUs / (4 * floor)).toFixed(2)} × 4; p99 / median ${(audited1.seq.p99Us / audited1.seq.medianUs).toFixed(2)}`,
      ...cpu,
      `0 handlers median: ${fmtUs(zero.seq.medianUs)}; ${rounds * PER_ROUND} sequential calls per case, interleaved in rounds of ${PER_ROUND} after ${WARMUP} warm-up calls each; ${THROUGHPUT_TOTAL} per throughput run; load average at the end: ${fmtLoad()}`,
    ].join("\n") + "\n",
  );
} finally {
  for (const p of procs.reverse()) await p.stop("SIGTERM", 5_000);
  const jsm = await jetstreamManager(conn.nc, { checkAPI: false });
  for (const n of [0, 1, 3]) await cleanupNamespace(jsm, nsOf(n)).catch(() => undefined);
  await conn.close();
}

/**
 * CPU per call, from each process's threads' on-CPU time (/proc): the cases take `CPU_TURNS` turns
 * of `CPU_CALLS` sequential calls each, and each case's own processes are read before and after
 * its calls (the dispatcher and its handlers; the audited forwarder and the echo responder), so
 * the dispatcher's CPU for a call stands beside the forwarder's for the same call, whatever the
 * machine's load does to their latency. Returns the report's lines.
 */
async function measureCpu(
  cases: ReadonlyArray<[string, () => Promise<unknown>]>,
  pids: ReadonlyMap<string, number>,
): Promise<string[]> {
  const natsPid = listenerPid(Number(new URL(natsUrl).port || 4222));
  const pick = (...names: string[]) =>
    new Map<string, number>([
      ...names.map((k) => [k, pids.get(k) ?? 0] as [string, number]),
      ...(natsPid ? [["nats-server", natsPid] as [string, number]] : []),
      ["bench (caller)", process.pid],
    ]);
  const meters = new Map<string, CpuPerCall>([
    ["1 handler", new CpuPerCall(pick("dispatcher 1", "h1"))],
    ["audited forwarder, 1", new CpuPerCall(pick("forwarder", "echo"))],
    ["3 handlers", new CpuPerCall(pick("dispatcher 3", "h1", "h2", "h3"))],
    ["audited forwarder, 3", new CpuPerCall(pick("forwarder", "echo"))],
  ]);
  for (let turn = 0; turn < CPU_TURNS; turn++)
    for (const [label, fn] of cases) {
      progress(`CPU per call: ${label}, turn ${turn + 1} of ${CPU_TURNS}, ${CPU_CALLS} calls`);
      const span = meters.get(label)!.start();
      for (let i = 0; i < CPU_CALLS; i++) await fn();
      span.end(CPU_CALLS);
    }
  const us = (m: CpuPerCall, name: string) => {
    const [lo, hi] = m.spread(name);
    return `${name} ${fmtUs(m.perCall(name))} (${lo.toFixed(0)}-${hi.toFixed(0)})`;
  };
  const lines: string[] = [];
  for (const [hook, fwd, handlers] of [
    ["1 handler", "audited forwarder, 1", ["h1"]],
    ["3 handlers", "audited forwarder, 3", ["h1", "h2", "h3"]],
  ] as const) {
    const [h, f] = [meters.get(hook)!, meters.get(fwd)!];
    const d = hook === "1 handler" ? "dispatcher 1" : "dispatcher 3";
    const ratio = h.perCall(d) / f.perCall("forwarder");
    const handlerUs = handlers.reduce((a, k) => a + h.perCall(k), 0);
    const target =
      hook === "1 handler"
        ? ` (target ≤ ${CPU_TARGET.toFixed(2)} ×): ${ratio <= CPU_TARGET ? "met" : "not met"}`
        : "";
    lines.push(
      `CPU per call, ${hook}: dispatcher / audited forwarder ${ratio.toFixed(2)} ×${target}; handler${handlers.length > 1 ? "s" : ""} / echo ${(handlerUs / f.perCall("echo")).toFixed(2)} ×`,
      `  µs per call (lowest-highest turn): ${us(h, d)}, ${handlers.map((k) => us(h, k)).join(", ")}, ${us(h, "nats-server")}, ${us(h, "bench (caller)")}; against ${us(f, "forwarder")}, ${us(f, "echo")}, ${us(f, "nats-server")}, ${us(f, "bench (caller)")}`,
    );
  }
  lines.push(
    `  (${CPU_TURNS} turns of ${CPU_CALLS} sequential calls per case, each process's threads' on-CPU time from /proc)`,
  );
  return lines;
}
