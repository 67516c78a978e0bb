/**
 * `BENCH_OBSERVABILITY_ONLY=1 pnpm bench hooks`: the cost of metrics and span export on the hook
 * path, in one run. Five hook-dispatcher processes, each in a namespace of its own, behind the same
 * 3 handler processes: metrics on (`/metrics` scraped once a second, as Prometheus would) and spans
 * exported over OTLP/HTTP (to a collector stand-in in a process of its own) for every trace; the
 * same with the caller recording one trace in ten (`BENCH_SAMPLE_RATIO`), as a runtime started with
 * `OTEL_TRACES_SAMPLER=parentbased_traceidratio` does; metrics alone; both off; and a second
 * dispatcher with both off, the control: how far two equal dispatchers differ in the same run is
 * the run's resolution. The calls go to the five in turn, 100 at a time (`BENCH_PER_ROUND`), each
 * round starting with the next one, so the drift of a shared machine hits all alike; each epoch
 * (`BENCH_ROUNDS`, default 8) starts fresh dispatchers with the modes moved to other namespaces,
 * and the throughput runs take turns in a rotating order. The `traceparent` headers travel in
 * every case.
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { ensureBucket } from "@geode/bus";
import { correlation, names } from "@geode/contracts";
import { connectGeode, createHookClient, HookName, runInTrace } from "@geode/runtime";
import { newTraceContext, traceSamplerFromEnv } from "@geode/telemetry";
import { cleanupNamespace, type SpawnedProcess, spawnService, waitFor } from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { processCpuMs, threadCpuMs } from "../lib/cpu-time.js";
import {
  fmtLoad,
  fmtRate,
  fmtUs,
  measureInterleaved,
  measureThroughput,
  progress,
  summarize,
  table,
} from "../lib/stats.js";

const SEQUENTIAL = Number(process.env["BENCH_N"] ?? 3_000);
const THROUGHPUT_TOTAL = Number(process.env["BENCH_TOTAL"] ?? 3_000);
/**
 * Epochs, each with fresh dispatcher processes. Two equal dispatchers differ by a few per cent at
 * the median in one epoch (each process's own luck: its core, its neighbours, its heap); more
 * epochs narrow how far the control moves (docs/benchmarks.md).
 */
const EPOCHS = Number(process.env["BENCH_ROUNDS"] ?? 8);
/**
 * Calls per turn: a turn (0.2-0.5 s here) outlasts the 50 ms after which a dispatcher makes the
 * spans it noted, so that work, and the exports it triggers, fall mostly in its own turn.
 */
const PER_ROUND = Number(process.env["BENCH_PER_ROUND"] ?? 100);
/**
 * Warm-up calls per fresh dispatcher. A service answers for hours; after 300 calls a dispatcher is
 * still young (its main thread takes more CPU per call than after 1,500), and the young phase
 * lasts longer with the span paths to compile, which would show as a cost of tracing that a
 * long-running service does not pay (docs/benchmarks.md).
 */
const WARMUP = Number(process.env["BENCH_WARMUP"] ?? 1_500);
const MODES = ["on", "sampled", "metrics", "off", "control"] as const;
type Mode = (typeof MODES)[number];
/** `sampled`: the caller starts its traces as a runtime with these OpenTelemetry variables does. */
const SAMPLE_RATIO = Number(process.env["BENCH_SAMPLE_RATIO"] ?? 0.1);
const SAMPLER = traceSamplerFromEnv({
  OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
  OTEL_TRACES_SAMPLER_ARG: String(SAMPLE_RATIO),
});
const LABEL: Record<Mode, string> = {
  off: "metrics and spans off",
  metrics: "metrics on",
  sampled: `metrics and span export on, ${SAMPLE_RATIO * 100} % of traces recorded`,
  on: "metrics and span export on, every trace recorded",
  control: "off too, a second dispatcher (the control)",
};

export async function observabilityBench(): Promise<void> {
  const run = randomBytes(3).toString("hex");
  const nsOf = (slot: number) => `bench_obs_${slot}_${run}`;
  const natsUrl = process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
  const conn = await connectGeode({ name: "bench-observability" });
  const procs: SpawnedProcess[] = [];
  const spawn = async (entry: string, args: string[], env: Record<string, string>, ready: RegExp) => {
    const p = spawnService(entry, { NATS_URL: natsUrl, LOG_LEVEL: "warn", ...env }, args);
    procs.push(p);
    await p.waitForOutput(ready, 60_000);
    return p;
  };
  const corr = correlation({ session_id: "bench", turn_id: "t" });
  const scrapes: NodeJS.Timeout[] = [];
  let sink: SpawnedProcess | undefined;
  try {
    const sinkPort = await freePort();
    sink = await spawn("bench/hooks/otlp-sink.ts", [String(sinkPort)], {}, /ready/);
    // One namespace per dispatcher slot; the 3 handler processes serve all three.
    const slots = MODES.map((_, k) => nsOf(k));
    for (const ns of slots) await ensureBucket(conn.nc, names(ns), "hookHandlers");
    for (const i of [1, 2, 3])
      await spawn("bench/hooks/handler.ts", ["handler", `h${i}`, String(i), slots.join(",")], {}, /ready/);
    const invokers = slots.map((ns) => {
      const hooks = createHookClient(conn.nc, names(ns));
      return () => hooks.invoke(HookName.UserPromptSubmit, { user_input: "hello" }, corr);
    });

    const perEpoch = Math.ceil(SEQUENTIAL / EPOCHS / PER_ROUND);
    const samples = MODES.map((): number[] => []);
    const cpu = MODES.map((): number[] => []);
    const mainCpu = MODES.map((): number[] => []);
    const rates = MODES.map((): number[] => []);
    /** Each mode's median per epoch, for the per-epoch line. */
    const epochMedians = MODES.map((): number[] => []);
    for (let epoch = 0; epoch < EPOCHS; epoch++) {
      // Fresh dispatcher processes each epoch, the modes moving to another slot each time, so
      // neither a process's luck (its core, its neighbours) nor a namespace's stays with one mode.
      const cases = [] as Array<{ mode: Mode; invoke: () => Promise<unknown>; dispatcher: SpawnedProcess }>;
      for (const [m, mode] of MODES.entries()) {
        const slot = (m + epoch) % slots.length;
        const metricsPort = mode === "off" || mode === "control" ? 0 : await freePort();
        const dispatcher = await spawn(
          "services/hook-dispatcher/src/main.ts",
          [],
          {
            GEODE_NAMESPACE: slots[slot]!,
            GEODE_METRICS_PORT: String(metricsPort),
            OTEL_EXPORTER_OTLP_ENDPOINT:
              mode === "on" || mode === "sampled" ? `http://127.0.0.1:${sinkPort}` : "",
            LOG_LEVEL: "info",
          },
          /hook-dispatcher started/,
        );
        const call = invokers[slot]!;
        const invoke = mode === "sampled" ? () => runInTrace(newTraceContext(SAMPLER), call) : call;
        await waitFor(async () => (await invoke().catch(() => null))?.decision_sources.length === 3, 30_000);
        // A scraper once a second on every dispatcher with metrics on.
        if (metricsPort)
          scrapes.push(
            setInterval(
              () =>
                void fetch(`http://127.0.0.1:${metricsPort}/metrics`).then(
                  (r) => r.text(),
                  () => "",
                ),
              1_000,
            ),
          );
        cases.push({ mode, invoke, dispatcher });
      }
      progress(`epoch ${epoch + 1} of ${EPOCHS}: warm-up, ${WARMUP} calls each`);
      for (const c of cases) for (let i = 0; i < WARMUP; i++) await c.invoke();
      progress(
        `epoch ${epoch + 1} of ${EPOCHS}: ${perEpoch} rounds of ${PER_ROUND} sequential calls per dispatcher`,
      );
      const cpuBefore = cases.map((c) => processCpuMs(c.dispatcher.child.pid ?? -1));
      const mainBefore = cases.map((c) => threadCpuMs(c.dispatcher.child.pid ?? -1));
      const from = samples.map((s) => s.length);
      await measureInterleaved(
        cases.map((c) => c.invoke),
        perEpoch,
        PER_ROUND,
        samples,
        { rotate: true },
      );
      for (const [i, s] of samples.entries()) epochMedians[i]!.push(summarize(s.slice(from[i])).medianUs);
      // CPU per call of each dispatcher over the sequential part (its own calls; the others idle).
      for (const [i, c] of cases.entries()) {
        const after = processCpuMs(c.dispatcher.child.pid ?? -1);
        const before = cpuBefore[i];
        if (after !== undefined && before !== undefined)
          cpu[i]!.push(((after - before) * 1000) / (perEpoch * PER_ROUND));
        const mainAfter = threadCpuMs(c.dispatcher.child.pid ?? -1);
        const mainStart = mainBefore[i];
        if (mainAfter !== undefined && mainStart !== undefined)
          mainCpu[i]!.push(((mainAfter - mainStart) * 1000) / (perEpoch * PER_ROUND));
      }
      for (let j = 0; j < cases.length; j++) {
        const i = (j + epoch) % cases.length; // each mode first, middle and last in turn
        progress(`epoch ${epoch + 1} of ${EPOCHS}: 64 callers, ${LABEL[cases[i]!.mode]}`);
        rates[i]!.push(await measureThroughput(THROUGHPUT_TOTAL, 64, cases[i]!.invoke));
      }
      for (const t of scrapes.splice(0)) clearInterval(t);
      for (const c of cases) {
        await c.dispatcher.stop("SIGTERM", 10_000);
        procs.splice(procs.indexOf(c.dispatcher), 1);
      }
    }
    const seq = samples.map(summarize);
    const rate = rates.map(median);
    const cpuPerCall = cpu.map(median);
    const mainCpuPerCall = mainCpu.map(median);

    const at = (mode: Mode) => MODES.indexOf(mode);
    process.stdout.write(
      `${table(
        ["dispatcher", "median", "p99", "CPU per call", "its main thread", "64 callers"],
        (["off", "control", "metrics", "sampled", "on"] as const).map((m) => [
          LABEL[m],
          fmtUs(seq[at(m)]!.medianUs),
          fmtUs(seq[at(m)]!.p99Us),
          fmtUs(cpuPerCall[at(m)]!),
          fmtUs(mainCpuPerCall[at(m)]!),
          fmtRate(rate[at(m)]!),
        ]),
      )}\n\n`,
    );
    const off = seq[at("off")]!.medianUs;
    const overhead = seq[at("on")]!.medianUs / off - 1;
    const metricsOnly = seq[at("metrics")]!.medianUs / off - 1;
    const sampled = seq[at("sampled")]!.medianUs / off - 1;
    const control = seq[at("control")]!.medianUs / off - 1;
    const perEpochVsOff = (mode: Mode) =>
      epochMedians[at(mode)]!.map((m, e) => {
        const pct = (m / epochMedians[at("off")]![e]! - 1) * 100;
        return `${pct >= 0 ? "+" : ""}${pct.toFixed(1)}`;
      }).join(", ");
    for (const t of scrapes) clearInterval(t);
    await sink.stop("SIGTERM", 5_000);
    const exported = /exported (.*)/.exec(sink.output())?.[1] ?? "unknown";
    process.stdout.write(
      `target: median overhead of metrics + span export, 3 handlers, every trace recorded: ${(overhead * 100).toFixed(1)} % (target ≤ 5 %): ${overhead <= 0.05 ? "met" : "not met"}\n` +
        `the same with ${SAMPLE_RATIO * 100} % of traces recorded (OTEL_TRACES_SAMPLER=parentbased_traceidratio, OTEL_TRACES_SAMPLER_ARG=${SAMPLE_RATIO} where traces start): ${(sampled * 100).toFixed(1)} % at the median\n` +
        `metrics alone: ${(metricsOnly * 100).toFixed(1)} % at the median\n` +
        `control, a second dispatcher with both off: ${(control * 100).toFixed(1)} % at the median (two equal dispatchers differ this much in this run)\n` +
        `per epoch, every trace recorded vs off: ${perEpochVsOff("on")} %; the control vs off: ${perEpochVsOff("control")} %\n` +
        `throughput at 64 callers on/off: ${(rate[at("on")]! / rate[at("off")]!).toFixed(3)}; OTLP collector took ${exported}\n` +
        `${EPOCHS} epochs, each with fresh dispatchers: ${perEpoch * PER_ROUND} sequential calls per dispatcher, interleaved in rotating rounds of ${PER_ROUND} after ${WARMUP} warm-up calls each, ` +
        `and one throughput run of ${THROUGHPUT_TOTAL} calls each in rotating order (median of ${EPOCHS}); CPU per call (the process, and its main thread alone): median over the epochs; load average at the end: ${fmtLoad()}\n`,
    );
  } finally {
    for (const t of scrapes) clearInterval(t);
    for (const p of procs.reverse()) await p.stop("SIGTERM", 5_000);
    const jsm = await jetstreamManager(conn.nc, { checkAPI: false });
    for (const [slot] of MODES.entries()) await cleanupNamespace(jsm, nsOf(slot)).catch(() => undefined);
    await conn.close();
  }
}

function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}
