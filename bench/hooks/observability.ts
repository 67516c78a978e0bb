/**
 * `BENCH_OBSERVABILITY_ONLY=1 pnpm bench hooks`: the cost of metrics and span export on the hook
 * path, in one run. A hook-dispatcher process with metrics on (`/metrics` served and scraped once a
 * second, as Prometheus would) and spans exported over OTLP/HTTP (to a sink in this process that
 * answers 200), one with metrics alone, and one with both off, taking turns behind the same 3
 * handler processes, so drift on a shared machine hits both alike. The `traceparent` headers
 * travel in both: propagation cannot be turned off.
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { loadavg } from "node:os";
import { ensureBucket } from "@geode/bus";
import { correlation } from "@geode/contracts";
import { connectGeode, createHookClient, HookName } from "@geode/runtime";
import { cleanupNamespace, type SpawnedProcess, spawnService, waitFor } from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { fmtRate, fmtUs, measureSequential, measureThroughput, progress, table } from "../lib/stats.js";

const SEQUENTIAL = Number(process.env["BENCH_N"] ?? 3_000);
const THROUGHPUT_TOTAL = Number(process.env["BENCH_TOTAL"] ?? 6_000);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 2);

export async function observabilityBench(): Promise<void> {
  const ns = `bench_obs_${randomBytes(3).toString("hex")}`;
  const env = {
    NATS_URL: process.env["NATS_URL"] ?? "nats://127.0.0.1:4222",
    GEODE_NAMESPACE: ns,
    LOG_LEVEL: "warn",
  };
  process.env["GEODE_NAMESPACE"] = ns;
  const conn = await connectGeode({ name: "bench-observability" });
  // The OTLP collector: takes every export and answers 200, counting the bytes.
  let exported = 0;
  const sink = createServer((req, res) => {
    req.on("data", (c: Buffer) => {
      exported += c.length;
    });
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
  });
  await new Promise<void>((r) => sink.listen(0, "127.0.0.1", r));
  const otlp = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const procs: SpawnedProcess[] = [];
  const spawn = async (entry: string, args: string[], ready: RegExp, extra: Record<string, string> = {}) => {
    const p = spawnService(entry, { ...env, ...extra }, args);
    procs.push(p);
    await p.waitForOutput(ready, 60_000);
    return p;
  };
  const hooks = createHookClient(conn.nc, conn.names);
  const corr = correlation({ session_id: "bench", turn_id: "t" });
  const invoke = () => hooks.invoke(HookName.UserPromptSubmit, { user_input: "hello" }, corr);
  const results = { on: [] as number[][], metrics: [] as number[][], off: [] as number[][] };
  try {
    await ensureBucket(conn.nc, conn.names, "hookHandlers");
    for (const i of [1, 2, 3])
      await spawn("bench/hooks/handler.ts", ["handler", `h${i}`, String(i)], /ready/);
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of ["on", "metrics", "off"] as const) {
        const port = await freePort();
        const extra: Record<string, string> = {
          GEODE_METRICS_PORT: mode === "off" ? "0" : String(port),
          OTEL_EXPORTER_OTLP_ENDPOINT: mode === "on" ? otlp : "",
          LOG_LEVEL: "info",
        };
        const dispatcher = await spawn(
          "services/hook-dispatcher/src/main.ts",
          [],
          /hook-dispatcher started/,
          extra,
        );
        await waitFor(async () => (await invoke().catch(() => null))?.decision_sources.length === 3, 30_000);
        // A scraper once a second while the dispatcher is measured with metrics on.
        const scrape =
          mode !== "off"
            ? setInterval(() => void fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()), 1_000)
            : undefined;
        progress(`hook, 3 handlers, observability ${mode} (round ${round + 1})`);
        const seq = await measureSequential(SEQUENTIAL, invoke, 500);
        const rate = await measureThroughput(THROUGHPUT_TOTAL, 64, invoke);
        if (scrape) clearInterval(scrape);
        results[mode].push([seq.medianUs, seq.p99Us, rate]);
        await dispatcher.stop("SIGTERM", 10_000);
        procs.splice(procs.indexOf(dispatcher), 1);
      }
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const col = (mode: keyof typeof results, i: number) => med(results[mode].map((r) => r[i] as number));
    process.stdout.write(
      `${table(
        ["dispatcher", "median", "p99", "64 callers"],
        (["off", "metrics", "on"] as const).map((m) => [
          { off: "metrics and spans off", metrics: "metrics on", on: "metrics and span export on" }[m],
          fmtUs(col(m, 0)),
          fmtUs(col(m, 1)),
          fmtRate(col(m, 2)),
        ]),
      )}\n\n`,
    );
    const overhead = col("on", 0) / col("off", 0) - 1;
    const metricsOnly = col("metrics", 0) / col("off", 0) - 1;
    process.stdout.write(
      `target: median overhead of metrics + span export, 3 handlers: ${(overhead * 100).toFixed(1)} % (target ≤ 5 %): ${overhead <= 0.05 ? "met" : "not met"}\n` +
        `metrics alone: ${(metricsOnly * 100).toFixed(1)} % at the median\n` +
        `throughput at 64 callers on/off: ${(col("on", 2) / col("off", 2)).toFixed(3)}; OTLP bytes exported: ${exported}; ` +
        `${ROUNDS} rounds, n=${SEQUENTIAL} sequential, ${THROUGHPUT_TOTAL} per throughput run; load average at the end: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(" ")}\n`,
    );
  } finally {
    for (const p of procs.reverse()) await p.stop("SIGTERM", 5_000);
    sink.close();
    await cleanupNamespace(await jetstreamManager(conn.nc, { checkAPI: false }), ns).catch(() => undefined);
    await conn.close();
  }
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
