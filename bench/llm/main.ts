/**
 * `pnpm bench llm`: a streamed model call through the agent gateway's `/v1/llm/{provider}/…`
 * against the same stand-in provider called directly, in one run, the cases taking turns: time to
 * first byte (targets: at most +2 ms at the median) and streaming throughput of a long answer
 * (target: at least 0.95 × direct), and the gateway process's CPU per call.
 */
import { randomBytes } from "node:crypto";
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { connectGeode, ensureBucket } from "@geode/bus";
import { sha256 } from "@geode/contracts";
import { cleanupNamespace, type SpawnedProcess, spawnService } from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { processCpuMs } from "../lib/cpu-time.js";
import { fmtLoad, fmtUs, measureInterleaved, progress, summarize, table } from "../lib/stats.js";

const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 30);
const PER_ROUND = 10;
/** A long answer: this many SSE chunks of `CHUNK_BYTES` each. */
const LONG_CHUNKS = Number(process.env["BENCH_LONG_CHUNKS"] ?? 2_000);
/** Long answers per case in the throughput phase. */
const LONG_ROUNDS = Number(process.env["BENCH_LONG_ROUNDS"] ?? ROUNDS);
const CHUNK_BYTES = 1024;
const TARGET_TTFB_MS = 2;
const TARGET_THROUGHPUT = 0.95;

const loadAtStart = fmtLoad();
const ns = `bench_llm_${randomBytes(3).toString("hex")}`;
const token = `geode_${randomBytes(24).toString("base64url")}`;
process.env["GEODE_NAMESPACE"] = ns;
const conn = await connectGeode({ name: "bench-llm" });

// The stand-in: a Responses stream, `chunks` data lines then `response.completed` with usage.
const delta = `event: response.output_text.delta\ndata: ${JSON.stringify({ type: "response.output_text.delta", delta: "x".repeat(CHUNK_BYTES - 80) })}\n\n`;
const completed = `event: response.completed\ndata: ${JSON.stringify({ type: "response.completed", response: { id: "r", usage: { input_tokens: 12, output_tokens: 8 } } })}\n\n`;
const standIn = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    const long = req.url?.includes("long") ?? false;
    res.writeHead(200, { "content-type": "text/event-stream" });
    const n = long ? LONG_CHUNKS : 8;
    let i = 0;
    const pump = () => {
      while (i < n) {
        i++;
        if (!res.write(delta)) return void res.once("drain", pump);
      }
      res.end(completed);
    };
    pump();
  });
});
await new Promise<void>((r) => standIn.listen(0, "127.0.0.1", r));
const standInUrl = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;

await (await ensureBucket(conn.nc, conn.names, "agents")).put(
  "bench",
  JSON.stringify({ name: "bench", token_sha256: sha256(token), created_at: Date.now() }),
);
await (await ensureBucket(conn.nc, conn.names, "llmProviders")).put(
  "bench",
  JSON.stringify({
    name: "bench",
    kind: "openai",
    base_url: `${standInUrl}/v1`,
    key_env: "BENCH_PROVIDER_KEY",
  }),
);
const procs: SpawnedProcess[] = [];
const gw = spawnService("services/agent-gateway/src/main.ts", {
  NATS_URL: process.env["NATS_URL"] ?? "nats://127.0.0.1:4222",
  GEODE_NAMESPACE: ns,
  GEODE_GATEWAY_ADDR: "127.0.0.1:0",
  BENCH_PROVIDER_KEY: "sk-bench",
  LOG_LEVEL: "info",
});
procs.push(gw);
await gw.waitForOutput(/listening on/, 60_000);
const gwUrl = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(gw.output())?.[1];
if (!gwUrl) throw new Error(`no address in:\n${gw.output()}`);
// The floor: a bare proxy process that only pipes the same stream (bench/llm/peer.ts).
const bare = spawnService("bench/llm/peer.ts", { BENCH_UPSTREAM: standInUrl });
procs.push(bare);
await bare.waitForOutput(/listening on/, 60_000);
const floorUrl = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(bare.output())?.[1];
if (!floorUrl) throw new Error(`no address in:\n${bare.output()}`);

const agent = new Agent({ keepAlive: true, maxSockets: 4 });
const body = JSON.stringify({ model: "gpt-5", stream: true, input: "hi" });
/** One streamed call: resolves with µs to the first body byte and to the end, and the bytes read. */
function call(base: string, path: string): Promise<{ ttfbUs: number; totalUs: number; bytes: number }> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}${path}`,
      {
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${token}`,
          "content-length": Buffer.byteLength(body),
        },
      },
      (res) => {
        let first = 0;
        let bytes = 0;
        res.on("data", (c: Buffer) => {
          if (first === 0) first = Number(process.hrtime.bigint() - t0) / 1000;
          bytes += c.length;
        });
        res.on("end", () =>
          res.statusCode === 200
            ? resolve({ ttfbUs: first, totalUs: Number(process.hrtime.bigint() - t0) / 1000, bytes })
            : reject(new Error(`status ${res.statusCode}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const direct = { base: standInUrl, path: "/v1/responses" };
const gateway = { base: gwUrl, path: "/v1/llm/bench/responses" };
const floor = { base: floorUrl, path: "/v1/responses" };
try {
  progress("warm-up");
  for (let i = 0; i < 100; i++) for (const c of [direct, gateway, floor]) await call(c.base, c.path);
  progress(`time to first byte: ${ROUNDS} rounds of ${PER_ROUND} calls per case`);
  const ttfb: number[][] = [[], []];
  const cpu0 = processCpuMs(gw.child.pid ?? 0) ?? 0;
  let gatewayCalls = 0;
  await measureInterleaved(
    [direct, gateway].map((c, i) => async () => {
      const r = await call(c.base, c.path);
      ttfb[i]?.push(r.ttfbUs);
      if (i === 1) gatewayCalls++;
    }),
    ROUNDS,
    PER_ROUND,
  );
  const cpuPerCallMs = ((processCpuMs(gw.child.pid ?? 0) ?? 0) - cpu0) / Math.max(1, gatewayCalls);
  progress(`throughput: ${LONG_ROUNDS} long answers (${LONG_CHUNKS} × ${CHUNK_BYTES} B) per case`);
  const rates: number[][] = [[], [], []];
  await measureInterleaved(
    [direct, gateway, floor].map((c, i) => async () => {
      const r = await call(c.base, `${c.path}?long`);
      rates[i]?.push(r.bytes / (r.totalUs / 1e6));
    }),
    LONG_ROUNDS,
    1,
  );
  const [d, g] = ttfb.map(summarize);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const [rd, rg, rf] = rates.map(median);
  const addedMs = ((g?.medianUs ?? 0) - (d?.medianUs ?? 0)) / 1000;
  const ratio = (rg ?? 0) / Math.max(1, rd ?? 1);
  const floorRatio = (rf ?? 0) / Math.max(1, rd ?? 1);
  process.stdout.write(
    `${table(
      ["case", "ttfb median", "ttfb p99", "stream MB/s (median)"],
      [
        ["direct", fmtUs(d?.medianUs ?? 0), fmtUs(d?.p99Us ?? 0), ((rd ?? 0) / 1e6).toFixed(1)],
        ["gateway", fmtUs(g?.medianUs ?? 0), fmtUs(g?.p99Us ?? 0), ((rg ?? 0) / 1e6).toFixed(1)],
        ["floor (bare proxy)", "", "", ((rf ?? 0) / 1e6).toFixed(1)],
      ],
    )}\n`,
  );
  process.stdout.write(
    [
      `added to first byte, median: ${addedMs.toFixed(2)} ms (target ≤ ${TARGET_TTFB_MS} ms: ${addedMs <= TARGET_TTFB_MS ? "met" : "not met"})`,
      `streaming throughput, gateway / direct: ${ratio.toFixed(2)} (target ≥ ${TARGET_THROUGHPUT}: ${ratio >= TARGET_THROUGHPUT ? "met" : "not met"})`,
      `floor (a bare proxy piping the same stream) / direct: ${floorRatio.toFixed(2)}; gateway / floor: ${((rg ?? 0) / Math.max(1, rf ?? 1)).toFixed(2)}`,
      `gateway CPU per short streamed call: ${cpuPerCallMs.toFixed(2)} ms`,
      `load at start ${loadAtStart}, at end ${fmtLoad()}`,
      "",
    ].join("\n"),
  );
} finally {
  agent.destroy();
  for (const p of procs) await p.stop();
  standIn.close();
  await cleanupNamespace(await jetstreamManager(conn.nc, { checkAPI: false }), ns).catch(() => undefined);
  await conn.nc.close();
}
