/**
 * `pnpm bench gateway`: one Claude Code hook call as Claude Code sees it (HTTP request → agent
 * gateway → hook-dispatcher → one PreToolUse handler → reply), against a trivial HTTP endpoint that
 * answers the same request directly, in one run, each in its own process. Also the gateway with no
 * hook to call (Notification) and with a hook that has no handler (PostToolUse), and the same
 * PreToolUse invoked directly over NATS, so the gateway's own share shows. Target: the gateway adds
 * at most 2 ms at the median. Then the command path of the agents with command hooks only
 * (command-path.ts): target at most 30 ms over a do-nothing command hook at the median. Qwen Code's
 * `type: "http"` hooks (`--fail-open`) take the HTTP path: its PreToolUse through
 * `/v1/qwen-code/hook`, the same target as Claude Code's.
 * Then opencode's plugin path (plugin-path.ts): target at most 3 ms per tool call at the median.
 * CPU per hook call: the gateway process's on-CPU time over PreToolUse calls, beside the same
 * calls invoked directly over NATS and the gateway's floor (peer.ts `forward`: HTTP in, one raw
 * NATS request out); target: the gateway's own share at most 0.3 ms.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { Agent, request } from "node:http";
import { connectGeode, createHookClient, ensureBucket } from "@geode/bus";
import { CLAUDE_CODE_HOOK_PATH, correlation, HookName, QWEN_CODE_HOOK_PATH, sha256 } from "@geode/contracts";
import { cleanupNamespace, type SpawnedProcess, spawnService, waitFor } from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { CpuPerCall } from "../lib/cpu-time.js";
import {
  fmtLoad,
  fmtRate,
  fmtUs,
  type LatencySummary,
  measureInterleaved,
  measureThroughput,
  progress,
  summarize,
  table,
} from "../lib/stats.js";
import {
  CODEX_CASE,
  COPILOT_CASE,
  GEMINI_CASE,
  measureCommandPaths,
  QWEN_CASE,
  qwenPreToolUse,
} from "./command-path.js";
import { measurePluginPath } from "./plugin-path.js";

const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 100);
const PER_ROUND = 20;
const WARMUP = 300;
const THROUGHPUT_TOTAL = Number(process.env["BENCH_TOTAL"] ?? 4_000);
const CONCURRENCY = 16;
const TARGET_ADDED_MS = 2;
/** Calls per turn of the CPU phase (`BENCH_CPU_CALLS`), three turns per case. */
const CPU_CALLS = Number(process.env["BENCH_CPU_CALLS"] ?? 1_000);
/** The gateway's own share of a hook call, ms (issue 42). */
const TARGET_OWN_MS = 0.3;

const loadAtStart = fmtLoad();
const ns = `bench_gateway_${randomBytes(3).toString("hex")}`;
const env = {
  NATS_URL: process.env["NATS_URL"] ?? "nats://127.0.0.1:4222",
  GEODE_NAMESPACE: ns,
  GEODE_GATEWAY_ADDR: "127.0.0.1:0",
  LOG_LEVEL: "info",
};
process.env["GEODE_NAMESPACE"] = ns;
const conn = await connectGeode({ name: "bench-gateway" });
const procs: SpawnedProcess[] = [];
const spawn = async (entry: string, args: string[], ready: RegExp): Promise<SpawnedProcess> => {
  const p = spawnService(entry, env, args);
  procs.push(p);
  await p.waitForOutput(ready, 60_000);
  return p;
};
const urlOf = (p: SpawnedProcess) => {
  const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(p.output());
  if (!m?.[1]) throw new Error(`no address in:\n${p.output()}`);
  return m[1];
};

// One keep-alive connection per caller, as a hook client that reuses its connection has.
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
function post(url: string, body: string, token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          authorization: `Bearer ${token}`,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () =>
          res.statusCode === 200 ? resolve(text) : reject(new Error(`${res.statusCode} ${text}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

// A PreToolUse input as Claude Code 2.1 sends it (one session, so the session is started once).
const sessionId = randomUUID();
const input = JSON.stringify({
  session_id: sessionId,
  transcript_path: `/home/dev/.claude/projects/-home-dev-src-parser/${sessionId}.jsonl`,
  cwd: "/home/dev/src/parser",
  prompt_id: randomUUID(),
  permission_mode: "default",
  effort: { level: "medium" },
  hook_event_name: "PreToolUse",
  tool_name: "Bash",
  tool_input: { command: "npm test -- --runInBand src/parser", description: "Run the parser tests" },
  tool_use_id: "toolu_01Bench",
});

try {
  const token = `geode_agent_${randomBytes(32).toString("base64url")}`;
  const agents = await ensureBucket(conn.nc, conn.names, "agents");
  await agents.put(
    "bench",
    JSON.stringify({ name: "bench", token_sha256: sha256(token), created_at: Date.now() }),
  );

  const endpointProc = await spawn("bench/gateway/peer.ts", ["endpoint"], /listening on/);
  const endpoint = `${urlOf(endpointProc)}${CLAUDE_CODE_HOOK_PATH}`;
  const dispatcherProc = await spawn("services/hook-dispatcher/src/main.ts", [], /hook-dispatcher started/);
  const handlerProc = await spawn("bench/gateway/peer.ts", ["handler"], /ready/);
  const forwardProc = await spawn("bench/gateway/peer.ts", ["forward"], /listening on/);
  const forwardUrl = `${urlOf(forwardProc)}${CLAUDE_CODE_HOOK_PATH}`;
  const gatewayProc = await spawn("services/agent-gateway/src/main.ts", [], /listening on/);
  const gatewayUrl = `${urlOf(gatewayProc)}${CLAUDE_CODE_HOOK_PATH}`;
  const cpuPids = new Map([
    ["gateway", gatewayProc.child.pid ?? 0],
    ["dispatcher", dispatcherProc.child.pid ?? 0],
    ["handler", handlerProc.child.pid ?? 0],
    ["endpoint", endpointProc.child.pid ?? 0],
    ["forwarder", forwardProc.child.pid ?? 0],
    ["caller", process.pid],
  ]);
  // Ready once the handler's decision comes back through the gateway.
  await waitFor(
    () =>
      post(gatewayUrl, input, token).then(
        () => true,
        () => false,
      ),
    30_000,
  );

  const qwenUrl = gatewayUrl.replace(CLAUDE_CODE_HOOK_PATH, QWEN_CODE_HOOK_PATH);
  const qwenInput = qwenPreToolUse(randomUUID());
  // The cases run interleaved, a few calls of each in turn, so a shared machine's load swings
  // alike over all of them and their differences stay meaningful.
  const hooks = createHookClient(conn.nc, conn.names);
  const corr = correlation({ session_id: sessionId, run_id: sessionId, tool_call_id: "toolu_01Bench" });
  const args = { command: "npm test -- --runInBand src/parser", description: "Run the parser tests" };
  const asEvent = (event: string) =>
    input.replace('"hook_event_name":"PreToolUse"', `"hook_event_name":"${event}"`);
  const notification = asEvent("Notification");
  const postToolUse = asEvent("PostToolUse").replace(
    '"tool_use_id"',
    '"tool_response":{"stdout":"12 passed","stderr":""},"tool_use_id"',
  );
  const cases: Array<[string, () => Promise<unknown>]> = [
    ["trivial HTTP endpoint answering {}", () => post(endpoint, input, token)],
    ["gateway: Notification (no hook, one event)", () => post(gatewayUrl, notification, token)],
    ["gateway: PostToolUse, 0 handlers", () => post(gatewayUrl, postToolUse, token)],
    ["gateway: PreToolUse, 1 handler", () => post(gatewayUrl, input, token)],
    [
      "PreToolUse invoked directly over NATS, 1 handler",
      () => hooks.invoke(HookName.PreToolUse, { tool_name: "Bash", arguments: args }, corr),
    ],
    ["gateway: Qwen Code PreToolUse (http hook), 1 handler", () => post(qwenUrl, qwenInput, token)],
  ];
  progress("warm-up");
  for (const [, fn] of cases) for (let i = 0; i < WARMUP; i++) await fn();
  progress(`${ROUNDS} rounds of ${PER_ROUND} calls per case`);
  const samples = await measureInterleaved(
    cases.map(([, fn]) => fn),
    ROUNDS,
    PER_ROUND,
  );
  const summaries = samples.map(summarize);
  progress(`throughput at ${CONCURRENCY} callers`);
  const floorRate = await measureThroughput(THROUGHPUT_TOTAL, CONCURRENCY, cases[0]![1]);
  const gatewayRate = await measureThroughput(THROUGHPUT_TOTAL, CONCURRENCY, cases[3]![1]);
  const rates = [floorRate, undefined, undefined, gatewayRate, undefined, undefined];
  // CPU per call: the gateway's, the dispatcher's and the handler's over the same PreToolUse
  // calls, against the same calls invoked directly over NATS and the trivial endpoint's.
  const cpu = new Map([
    ["gateway", new CpuPerCall(cpuPids)],
    ["direct", new CpuPerCall(cpuPids)],
    ["endpoint", new CpuPerCall(cpuPids)],
    ["forwarder", new CpuPerCall(cpuPids)],
  ]);
  for (let turn = 0; turn < 3; turn++)
    for (const [key, fn] of [
      ["gateway", cases[3]![1]],
      ["direct", cases[4]![1]],
      ["endpoint", cases[0]![1]],
      ["forwarder", () => post(forwardUrl, input, token)],
    ] as const) {
      progress(`CPU per call: ${key}, turn ${turn + 1} of 3, ${CPU_CALLS} calls`);
      const span = cpu.get(key)!.start();
      for (let i = 0; i < CPU_CALLS; i++) await fn();
      span.end(CPU_CALLS);
    }

  const [floor, , , gateway, direct, qwen] = summaries as [
    LatencySummary,
    LatencySummary,
    LatencySummary,
    LatencySummary,
    LatencySummary,
    LatencySummary,
  ];
  const added = gateway.medianUs - floor.medianUs;
  const addedQwen = qwen.medianUs - floor.medianUs;
  process.stdout.write(
    `${table(
      ["case", "median", "p99", `${CONCURRENCY} callers`],
      cases.map(([label], i) => [
        label,
        fmtUs(summaries[i]!.medianUs),
        fmtUs(summaries[i]!.p99Us),
        rates[i] === undefined ? "" : fmtRate(rates[i]),
      ]),
    )}\n\n`,
  );
  const commandPath = await measureCommandPaths(
    gatewayUrl.replace(CLAUDE_CODE_HOOK_PATH, ""),
    token,
    [CODEX_CASE, GEMINI_CASE, COPILOT_CASE, QWEN_CASE],
    Math.max(10, Math.round(ROUNDS / 5)),
  );
  process.stdout.write(`${commandPath.text}\n`);
  const pluginPath = await measurePluginPath(
    gatewayUrl.replace(CLAUDE_CODE_HOOK_PATH, ""),
    token,
    Math.max(10, Math.round(ROUNDS / 2)),
  );
  process.stdout.write(`${pluginPath.text}\n`);
  process.stdout.write(
    [
      `added per hook call, median: ${(added / 1000).toFixed(2)} ms (target ≤ ${TARGET_ADDED_MS} ms): ${added / 1000 <= TARGET_ADDED_MS ? "met" : "not met"}`,
      `  (gateway PreToolUse with 1 handler − trivial endpoint; of which the same hook call invoked directly on the plane: ${fmtUs(direct.medianUs)}; the gateway's own share: ${fmtUs(added - direct.medianUs)})`,
      ...cpuLines(cpu),
      `added per Qwen Code http hook call, median: ${(addedQwen / 1000).toFixed(2)} ms (target ≤ ${TARGET_ADDED_MS} ms): ${addedQwen / 1000 <= TARGET_ADDED_MS ? "met" : "not met"}`,
      `${ROUNDS * PER_ROUND} calls per case, interleaved in rounds of ${PER_ROUND}, after ${WARMUP} warm-up calls each; ${THROUGHPUT_TOTAL} calls at ${CONCURRENCY} concurrent callers; keep-alive connections`,
      `load average (1, 5, 15 min): ${loadAtStart} at the start, ${fmtLoad()} at the end`,
    ].join("\n") + "\n",
  );
} finally {
  agent.destroy();
  for (const p of procs.reverse()) await p.stop("SIGTERM", 5_000);
  await cleanupNamespace(await jetstreamManager(conn.nc, { checkAPI: false }), ns).catch(() => undefined);
  await conn.close();
}

/** The CPU phase's lines: the gateway's own CPU per hook call and the rest of the path's. */
function cpuLines(cpu: Map<string, CpuPerCall>): string[] {
  const [g, d, e, f] = [cpu.get("gateway")!, cpu.get("direct")!, cpu.get("endpoint")!, cpu.get("forwarder")!];
  const own = g.perCall("gateway");
  const [lo, hi] = g.spread("gateway");
  const us = (m: CpuPerCall, name: string) => `${name} ${fmtUs(m.perCall(name))}`;
  return [
    `CPU per hook call, the gateway process (PreToolUse, 1 handler): ${fmtUs(own)} (turns ${lo.toFixed(0)}-${hi.toFixed(0)} µs) (target ≤ ${TARGET_OWN_MS} ms): ${own / 1000 <= TARGET_OWN_MS ? "met" : "not met"}; ${(own / f.perCall("forwarder")).toFixed(2)} × its floor`,
    `  floor: an HTTP endpoint that parses the input and makes one raw NATS request (peer.ts forward): ${fmtUs(f.perCall("forwarder"))} CPU per call (the NATS responder ${fmtUs(f.perCall("handler"))})`,
    `  the same calls: ${us(g, "dispatcher")}, ${us(g, "handler")}, ${us(g, "caller")}; invoked directly over NATS: ${us(d, "dispatcher")}, ${us(d, "handler")}, ${us(d, "caller")}; the trivial endpoint's own CPU per call ${fmtUs(e.perCall("endpoint"))} (caller ${fmtUs(e.perCall("caller"))})`,
  ];
}
