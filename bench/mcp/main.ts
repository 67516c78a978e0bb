/**
 * `pnpm bench mcp`: one MCP `tools/call` of @modelcontextprotocol/server-filesystem's
 * `read_text_file` on a 256-byte file, made with the v2 SDK client, in one run:
 * - direct: to the upstream over stdio (the client starts it);
 * - floor: through a bare forwarding proxy on the same SDK (peer.ts: streamable HTTP on loopback,
 *   stateless, one stdio client of its own upstream);
 * - plane: through `POST /v1/mcp` on an agent-gateway process, with a policy-guard (the
 *   `destructive-shell` pack), hook-dispatcher, tool-executor and mcp-bridge process, the bridge
 *   with its own upstream;
 * - plane, mutating: `write_file` through the plane (effect `mutation`: admitted with a receipt);
 * - the floor of the plane's path (peer.ts `chain-*`): five processes in the plane's places
 *   passing the call on over NATS as the plane's do, with none of its work;
 * - the plane's parts alone: the tool-executor's call over NATS (no gateway) and the bridge's
 *   terminal over NATS (no executor), and a raw NATS request/reply, so a missed target says where;
 * then 32 concurrent clients (32 SDK clients, each its own calls in turn) for the floor, the plane
 * and the floor of its path, and for the direct upstream 32 calls at a time on its one stdio
 * client (what the floor's and the bridge's one client can get at most).
 * The sequential cases take turns 20 calls at a time. CPU per call: every process this benchmark
 * started (itself, the services, the proxy and the three upstreams) over a block of calls of one
 * case, from /proc; nats-server's apart (a shared server: other work on the machine adds to it).
 * Targets: added latency (plane − direct) ≤ 1.5 × (floor − direct) at the median; plane p99 ≤ 4 ×
 * its median; mutating ≤ 2 × read at the median; the plane at 32 clients ≥ 0.7 × the floor's rate.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { connectGeode, ensureBucket, requestJson } from "@geode/bus";
import { HookName, policyRecord, sha256 } from "@geode/contracts";
import { packText } from "@geode/policy";
import { createHookClient, createToolClient } from "@geode/runtime";
import { PolicyStore } from "@geode/state";
import { cleanupNamespace, type SpawnedProcess, spawnService, waitFor } from "@geode/testing";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { jetstreamManager } from "@nats-io/jetstream";
import { listenerPid, processCpuMs, processTree, type TreeProcess } from "../lib/cpu-time.js";
import {
  fmtLoad,
  fmtRate,
  fmtUs,
  type LatencySummary,
  measureInterleaved,
  progress,
  summarize,
  table,
} from "../lib/stats.js";

const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 50);
const PER_ROUND = 20;
const WARMUP = Number(process.env["BENCH_WARMUP"] ?? 300);
const CPU_CALLS = Number(process.env["BENCH_CPU_N"] ?? 400);
const THROUGHPUT_TOTAL = Number(process.env["BENCH_TOTAL"] ?? 3_000);
const CONCURRENCY = 32;
/** Throughput runs alternate floor and plane this many times, each a share of the total. */
const EPOCHS = 2;
const TARGET = { added: 1.5, tail: 4, mutating: 2, throughput: 0.7 };

const loadAtStart = fmtLoad();
const run = randomBytes(3).toString("hex");
const ns = `bench_mcp_${run}`;
process.env["GEODE_NAMESPACE"] = ns;
const natsUrl = process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
// tmpfs when there is one: the bench measures the path to the file, not the disk under it.
const root = mkdtempSync(path.join(existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir(), "geode-bench-mcp-"));
const NOTE = path.join(root, "note.txt");
writeFileSync(NOTE, `${"The quick brown fox jumps over the lazy dog. ".repeat(6)}\n`.slice(0, 256));
const OUT = path.join(root, "out.txt");
const require = createRequire(import.meta.url);
const upstream = {
  command: process.execPath,
  args: [require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js"), root],
};
const env = {
  NATS_URL: natsUrl,
  GEODE_NAMESPACE: ns,
  GEODE_GATEWAY_ADDR: "127.0.0.1:0",
  GEODE_TOOL_ROOT: root,
  LOG_LEVEL: "info",
};
const conn = await connectGeode({ name: "bench-mcp" });
/** The NATS server of NATS_URL (the machine may run others), for its CPU per call. */
const natsPid = listenerPid(Number(new URL(natsUrl.split(",")[0]!).port || 4222));
const responderConn = await connectGeode({ name: "bench-mcp-raw" });
const procs: SpawnedProcess[] = [];
/** Process id → label, for the CPU shares. */
const labels = new Map<number, string>([[process.pid, "bench client"]]);
const spawn = async (label: string, entry: string, args: string[], ready: RegExp) => {
  const p = spawnService(entry, env, args);
  procs.push(p);
  await p.waitForOutput(ready, 60_000);
  if (p.child.pid) labels.set(p.child.pid, label);
  return p;
};
const urlOf = (p: SpawnedProcess) => {
  const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(p.output());
  if (!m?.[1]) throw new Error(`no address in:\n${p.output()}`);
  return m[1];
};
const clients: Client[] = [];
async function httpClient(url: string, token?: string): Promise<Client> {
  const client = new Client(
    { name: "bench-mcp", version: "0.1.0" },
    { versionNegotiation: { mode: "auto" } },
  );
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

type CallResult = { isError?: boolean; content?: unknown };
/** A call that must come back as the upstream's own successful result. */
async function ok(call: Promise<unknown>): Promise<void> {
  const r = (await call) as CallResult;
  if (r.isError) throw new Error(`tool error: ${JSON.stringify(r.content).slice(0, 300)}`);
}
const readArgs = { path: NOTE };
const read = (c: Client) => ok(c.callTool({ name: "read_text_file", arguments: readArgs }));
const readPlane = (c: Client) => ok(c.callTool({ name: "fs_read_text_file", arguments: readArgs }));
const writePlane = (c: Client) =>
  ok(c.callTool({ name: "fs_write_file", arguments: { path: OUT, content: "hello from the bench\n" } }));

/** CPU per call (µs) of a block of calls, by label, and nats-server's. */
interface CpuPerCall {
  total: number;
  nats: number | undefined;
  by: Map<string, number>;
}
function cpuSpan(): { end(calls: number): CpuPerCall } {
  const before = processTree();
  const nats0 = natsPid === undefined ? undefined : processCpuMs(natsPid);
  return {
    end(calls) {
      const after = processTree();
      const nats1 = natsPid === undefined ? undefined : processCpuMs(natsPid);
      const labelOf = (pid: number, tree: Map<number, TreeProcess>): string => {
        const own = labels.get(pid);
        if (own) return own;
        const parent = tree.get(pid)?.ppid;
        const up = parent === undefined ? undefined : labels.get(parent);
        return up ? `${up}'s upstream` : "other";
      };
      const by = new Map<string, number>();
      let total = 0;
      for (const [pid, p] of after) {
        const ms = p.cpuMs - (before.get(pid)?.cpuMs ?? 0);
        const label = labelOf(pid, after);
        by.set(label, (by.get(label) ?? 0) + (ms * 1000) / calls);
        total += ms;
      }
      return {
        total: (total * 1000) / calls,
        nats: nats0 === undefined || nats1 === undefined ? undefined : ((nats1 - nats0) * 1000) / calls,
        by,
      };
    },
  };
}

/** `calls` calls of `fn` in turn, with the CPU they took. */
async function cpuOf(calls: number, fn: () => Promise<unknown>): Promise<CpuPerCall> {
  const span = cpuSpan();
  for (let i = 0; i < calls; i++) await fn();
  return span.end(calls);
}

/** `total` calls, `workers.length` callers each calling its own function in turn: rate and latencies. */
async function concurrent(
  total: number,
  workers: ReadonlyArray<() => Promise<unknown>>,
): Promise<{ rate: number; samples: number[]; cpu: CpuPerCall }> {
  let next = 0;
  const samples: number[] = [];
  const span = cpuSpan();
  const t0 = performance.now();
  await Promise.all(
    workers.map(async (fn) => {
      while (next < total) {
        next++;
        const s = performance.now();
        await fn();
        samples.push((performance.now() - s) * 1000);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { rate: total / seconds, samples, cpu: span.end(total) };
}

const cpuCell = (c: CpuPerCall | undefined) => (c ? fmtUs(c.total) : "");
const natsCell = (c: CpuPerCall | undefined) => (c?.nats === undefined ? "" : fmtUs(c.nats));
const shares = (c: CpuPerCall) =>
  [...c.by]
    .filter(([, us]) => us >= 1)
    .sort((a, b) => b[1] - a[1])
    .map(([label, us]) => `${label} ${fmtUs(us)}`)
    .join(", ");
const met = (ok: boolean) => (ok ? "met" : "not met");

try {
  // The plane: an agent and its token, the pack, the upstream's record, then the services.
  const token = `geode_agent_${randomBytes(32).toString("base64url")}`;
  const agents = await ensureBucket(conn.nc, conn.names, "agents");
  await agents.put(
    "bench",
    JSON.stringify({ name: "bench", token_sha256: sha256(token), created_at: Date.now() }),
  );
  const policies = await PolicyStore.open(conn);
  await policies.put(
    policyRecord("destructive-shell", packText("destructive-shell") ?? "", "enforce", "bench"),
  );
  const servers = await ensureBucket(conn.nc, conn.names, "mcpServers");
  await servers.put(
    "fs",
    JSON.stringify({
      name: "fs",
      transport: "stdio",
      ...upstream,
      tools: ["read_text_file", "write_file"],
      created_at: Date.now(),
      updated_by: "bench",
    }),
  );
  progress("starting the plane's services and the floor's proxy");
  await spawn("hook-dispatcher", "services/hook-dispatcher/src/main.ts", [], /hook-dispatcher started/);
  await spawn("policy-guard", "services/policy-guard/src/main.ts", [], /policy-guard started/);
  await spawn("tool-executor", "services/tool-executor/src/main.ts", [], /tool-executor started/);
  await spawn("mcp-bridge", "services/mcp-bridge/src/main.ts", [], /mcp-bridge started/);
  const gatewayUrl = `${urlOf(await spawn("agent-gateway", "services/agent-gateway/src/main.ts", [], /listening on/))}/v1/mcp`;
  const floorUrl = urlOf(
    await spawn(
      "floor proxy",
      "bench/mcp/peer.ts",
      ["proxy", upstream.command, ...upstream.args],
      /listening on/,
    ),
  );
  for (const role of ["guard", "dispatcher", "executor"])
    await spawn(`chain ${role}`, "bench/mcp/peer.ts", [`chain-${role}`], /ready/);
  await spawn(
    "chain terminal",
    "bench/mcp/peer.ts",
    ["chain-terminal", upstream.command, ...upstream.args],
    /ready/,
  );
  const chainUrl = urlOf(await spawn("chain http", "bench/mcp/peer.ts", ["chain-http"], /listening on/));

  const direct = new Client({ name: "bench-mcp", version: "0.1.0" });
  const stdio = new StdioClientTransport({ ...upstream, stderr: "ignore" });
  await direct.connect(stdio);
  clients.push(direct);
  if (stdio.pid) labels.set(stdio.pid, "direct upstream");
  const floor = await httpClient(floorUrl);
  const plane = await httpClient(gatewayUrl, token);
  const chain = await httpClient(chainUrl);

  // Ready: the bridge's tools are registered and a call comes back; the guard has its pack.
  await waitFor(
    () =>
      readPlane(plane).then(
        () => true,
        () => false,
      ),
    60_000,
  );
  const hooks = createHookClient(conn.nc, conn.names);
  await waitFor(async () => {
    const out = await hooks
      .invoke(
        HookName.PreToolUse,
        { tool_name: "Bash", arguments: { command: "rm -rf /" } },
        { session_id: "bench-ready" },
      )
      .catch(() => null);
    return out?.blocked === true;
  }, 30_000);

  // The plane's parts alone: the executor's call (its hooks, the guard, the bridge, the upstream)
  // and the bridge's terminal (the bridge and the upstream), both over NATS from here.
  const tools = createToolClient(conn);
  let seq = 0;
  const executorRead = async () => {
    const r = await tools.execute({
      tool_name: "fs_read_text_file",
      arguments: readArgs,
      correlation: { session_id: "bench-executor", tool_call_id: `e${seq++}` },
    });
    if (r.status !== "completed" || r.has_error) throw new Error(`executor call ${r.status}: ${r.reason}`);
  };
  const terminalRead = async () => {
    const r = await requestJson<{ has_error: boolean }>(
      conn.nc,
      conn.names.toolTerminal("fs_read_text_file"),
      { tool_name: "fs_read_text_file", arguments: readArgs, correlation: { session_id: "bench-terminal" } },
      { timeoutMs: 30_000 },
    );
    if (r.has_error) throw new Error("the terminal answered an error result");
  };
  const rawSubject = `${ns}.bench.raw`;
  responderConn.nc.subscribe(rawSubject, {
    callback: (_e, m) => {
      m.respond(m.data);
    },
  });
  await responderConn.nc.flush();
  const rawBody = new TextEncoder().encode(
    JSON.stringify({ tool_name: "fs_read_text_file", arguments: readArgs }),
  );
  const raw = () => conn.nc.request(rawSubject, rawBody, { timeout: 5_000 });

  const cases: Array<[string, () => Promise<unknown>]> = [
    ["direct: stdio to the upstream", () => read(direct)],
    ["floor: bare SDK forwarding proxy (HTTP → stdio)", () => read(floor)],
    ["plane: POST /v1/mcp, read_text_file", () => readPlane(plane)],
    ["plane: POST /v1/mcp, write_file (mutation, receipt)", () => writePlane(plane)],
    ["  floor of the plane's path: its five processes passing the call on, no plane work", () => read(chain)],
    ["  part: the tool-executor's call over NATS (no gateway)", executorRead],
    ["  part: the bridge's terminal over NATS (no executor)", terminalRead],
    ["  raw NATS request/reply", raw],
  ];
  // Every case answers as it should before anything is measured.
  for (const [label, fn] of cases)
    await fn().catch((err: unknown) => {
      throw new Error(`${label.trim()}: ${err instanceof Error ? err.message : String(err)}`);
    });
  progress(`warm-up, ${WARMUP} calls per case`);
  for (const [, fn] of cases) for (let i = 0; i < WARMUP; i++) await fn();
  progress(`${ROUNDS} rounds of ${PER_ROUND} sequential calls per case`);
  const samples = await measureInterleaved(
    cases.map(([, fn]) => fn),
    ROUNDS,
    PER_ROUND,
    undefined,
    { rotate: true },
  );
  const seqs = samples.map(summarize);
  progress(`CPU per call, ${CPU_CALLS} sequential calls per case`);
  const cpus: CpuPerCall[] = [];
  for (const [, fn] of cases.slice(0, 5)) cpus.push(await cpuOf(CPU_CALLS, fn));

  progress(`${CONCURRENCY} concurrent clients`);
  const floors = await Promise.all(Array.from({ length: CONCURRENCY }, () => httpClient(floorUrl)));
  const planes = await Promise.all(Array.from({ length: CONCURRENCY }, () => httpClient(gatewayUrl, token)));
  const floorWorkers = floors.map((c) => () => read(c));
  const planeWorkers = planes.map((c) => () => readPlane(c));
  const chains = await Promise.all(Array.from({ length: CONCURRENCY }, () => httpClient(chainUrl)));
  const chainWorkers = chains.map((c) => () => read(c));
  const directWorkers = Array.from({ length: CONCURRENCY }, () => () => read(direct));
  for (const workers of [floorWorkers, planeWorkers, chainWorkers, directWorkers])
    await concurrent(CONCURRENCY * 10, workers);
  const share = Math.ceil(THROUGHPUT_TOTAL / EPOCHS);
  const tp = {
    direct: [] as Array<Awaited<ReturnType<typeof concurrent>>>,
    floor: [] as Array<Awaited<ReturnType<typeof concurrent>>>,
    plane: [] as Array<Awaited<ReturnType<typeof concurrent>>>,
    chain: [] as Array<Awaited<ReturnType<typeof concurrent>>>,
  };
  for (let e = 0; e < EPOCHS; e++) {
    tp.floor.push(await concurrent(share, floorWorkers));
    tp.plane.push(await concurrent(share, planeWorkers));
    tp.chain.push(await concurrent(share, chainWorkers));
    tp.direct.push(await concurrent(share, directWorkers));
  }
  const merged = (runs: Array<Awaited<ReturnType<typeof concurrent>>>) => {
    const by = new Map<string, number>();
    for (const r of runs) for (const [k, v] of r.cpu.by) by.set(k, (by.get(k) ?? 0) + v / runs.length);
    const nats = runs.every((r) => r.cpu.nats !== undefined)
      ? runs.reduce((a, r) => a + (r.cpu.nats ?? 0), 0) / runs.length
      : undefined;
    return {
      // Calls over the summed time of the runs.
      rate: (runs.length * share) / runs.reduce((a, r) => a + share / r.rate, 0),
      lat: summarize(runs.flatMap((r) => r.samples)),
      cpu: { total: runs.reduce((a, r) => a + r.cpu.total, 0) / runs.length, nats, by },
    };
  };
  const at32 = {
    direct: merged(tp.direct),
    floor: merged(tp.floor),
    plane: merged(tp.plane),
    chain: merged(tp.chain),
  };

  const seqRate = (s: LatencySummary) => fmtRate(1e6 / s.meanUs);
  const rows: Array<Array<string>> = cases.map(([label], i) => [
    label,
    fmtUs(seqs[i]!.medianUs),
    fmtUs(seqs[i]!.p99Us),
    seqRate(seqs[i]!),
    cpuCell(cpus[i]),
    natsCell(cpus[i]),
  ]);
  for (const [label, r] of [
    [`direct: ${CONCURRENCY} calls at a time on its one stdio client`, at32.direct],
    [`floor: ${CONCURRENCY} concurrent clients`, at32.floor],
    [`plane: ${CONCURRENCY} concurrent clients, read_text_file`, at32.plane],
    [`floor of the plane's path: ${CONCURRENCY} concurrent clients`, at32.chain],
  ] as const)
    rows.push([
      label,
      fmtUs(r.lat.medianUs),
      fmtUs(r.lat.p99Us),
      fmtRate(r.rate),
      cpuCell(r.cpu),
      natsCell(r.cpu),
    ]);
  process.stdout.write(
    `${table(["case", "median", "p99", "calls/s", "CPU per call", "nats-server CPU per call"], rows)}\n\n`,
  );

  const [d, f, p, w, c, ex, term, rawRt] = seqs as [
    LatencySummary,
    LatencySummary,
    LatencySummary,
    LatencySummary,
    LatencySummary,
    LatencySummary,
    LatencySummary,
    LatencySummary,
  ];
  const added = p.medianUs - d.medianUs;
  const floorAdded = f.medianUs - d.medianUs;
  const addedRatio = added / floorAdded;
  const tail = p.p99Us / p.medianUs;
  const mutating = w.medianUs / p.medianUs;
  const throughput = at32.plane.rate / at32.floor.rate;
  const cpuBound = at32.floor.cpu.total / at32.plane.cpu.total;
  const chainAdded = (c.medianUs - d.medianUs) / floorAdded;
  process.stdout.write(
    [
      `target: added latency (plane − direct) / (floor − direct), median: ${fmtUs(added)} / ${fmtUs(floorAdded)} = ${addedRatio.toFixed(2)} (target ≤ ${TARGET.added}): ${met(addedRatio <= TARGET.added)}`,
      `  floor: the plane's path without the plane's work (chain − direct) / (floor − direct): ${chainAdded.toFixed(2)}`,
      `target: plane p99 / plane median: ${tail.toFixed(2)} (target ≤ ${TARGET.tail}): ${met(tail <= TARGET.tail)}`,
      `  floor: the same ratio of the direct call ${(d.p99Us / d.medianUs).toFixed(2)}, the proxy ${(f.p99Us / f.medianUs).toFixed(2)}, the plane's path without its work ${(c.p99Us / c.medianUs).toFixed(2)}`,
      `target: mutating / read through the plane, median: ${mutating.toFixed(2)} (target ≤ ${TARGET.mutating}): ${met(mutating <= TARGET.mutating)}`,
      `target: plane / floor at ${CONCURRENCY} clients: ${fmtRate(at32.plane.rate)} / ${fmtRate(at32.floor.rate)} = ${throughput.toFixed(2)} (target ≥ ${TARGET.throughput}): ${met(throughput >= TARGET.throughput)}`,
      `  floor: the plane's path without its work / floor at ${CONCURRENCY} clients: ${(at32.chain.rate / at32.floor.rate).toFixed(2)}; with the cores saturated the plane's rate is at most floor CPU / plane CPU per call = ${cpuBound.toFixed(2)} of the floor's (the path without its work: ${(at32.floor.cpu.total / at32.chain.cpu.total).toFixed(2)})`,
      `where the plane's median goes: gateway (HTTP, MCP, session) ${fmtUs(p.medianUs - ex.medianUs)}; executor, hooks and guard ${fmtUs(ex.medianUs - term.medianUs)}; the bridge's terminal over NATS ${fmtUs(term.medianUs)} (direct: ${fmtUs(d.medianUs)}); a raw NATS request/reply ${fmtUs(rawRt.medianUs)}`,
      `CPU per call by process, plane read, sequential: ${shares(cpus[2]!)}`,
      `CPU per call by process, plane read, ${CONCURRENCY} clients: ${shares(at32.plane.cpu)}`,
      `CPU per call by process, the plane's path without its work, ${CONCURRENCY} clients: ${shares(at32.chain.cpu)}`,
      `CPU per call by process, floor, ${CONCURRENCY} clients: ${shares(at32.floor.cpu)}`,
      `${ROUNDS * PER_ROUND} sequential calls per case, interleaved in rounds of ${PER_ROUND} after ${WARMUP} warm-up calls each; CPU per call over ${CPU_CALLS} more; ${EPOCHS * share} calls per case at ${CONCURRENCY} concurrent callers, the cases alternating; MCP revision 2026-07-28 over HTTP (the v2 client's auto negotiation), 2025-11-25 over stdio`,
      `load average (1, 5, 15 min): ${loadAtStart} at the start, ${fmtLoad()} at the end`,
    ].join("\n") + "\n",
  );
} catch (err) {
  // What the services said last, to tell a bench's mistake from the plane's.
  for (const p of procs) {
    const label = labels.get(p.child.pid ?? 0) ?? "?";
    // All a process that ended said (a crash's report), the last lines of the others.
    const lines = p.child.exitCode === null && p.child.signalCode === null ? 5 : 200;
    const tail = p.output().trimEnd().split("\n").slice(-lines).join("\n  ");
    process.stderr.write(`--- ${label}:\n  ${tail}\n`);
  }
  throw err;
} finally {
  for (const c of clients) await c.close().catch(() => undefined);
  for (const p of procs.reverse()) await p.stop("SIGTERM", 5_000);
  await cleanupNamespace(await jetstreamManager(conn.nc, { checkAPI: false }), ns).catch(() => undefined);
  await responderConn.close();
  await conn.close();
  rmSync(root, { recursive: true, force: true });
}
