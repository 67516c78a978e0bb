/**
 * `pnpm bench tools`: tool calls through a hook-dispatcher process and a tool-executor process, in
 * one run, against the raw NATS request/reply round trip (the floor):
 * - a read-only call (`echo`, no receipt) and a mutation (`fs.write`, with its admission receipt
 *   created and committed in KV), each with 0 and 1 PreToolUse handler;
 * - the hook invocations alone (PreToolUse + PostToolUse, same handlers), measured directly, so
 *   the executor's own overhead is the call minus its hook time.
 * Targets: overhead under 3 raw round trips for a read-only call, under 5 for a mutation.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ensureBucket } from "@geode/bus";
import { correlation } from "@geode/contracts";
import { createHookClient, createToolClient } from "@geode/runtime";
import { connectGeode, HookName, serveHook } from "@geode/sdk";
import { cleanupNamespace, type SpawnedProcess, spawnService, waitFor } from "@geode/testing";
import { builtinTools } from "@geode/tool-executor";
import { jetstreamManager } from "@nats-io/jetstream";
import { fmtUs, type LatencySummary, measureSequential, progress, table } from "../lib/stats.js";

const N = Number(process.env["BENCH_N"] ?? 1_000);
const ns = `bench_tools_${randomBytes(3).toString("hex")}`;
// tmpfs when there is one: the bench measures the executor, not the disk under fs.write.
const toolRoot = mkdtempSync(
  path.join(existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir(), "geode-bench-tools-"),
);
const env = {
  NATS_URL: process.env["NATS_URL"] ?? "nats://127.0.0.1:4222",
  GEODE_NAMESPACE: ns,
  GEODE_TOOL_ROOT: toolRoot,
  LOG_LEVEL: "info",
};
process.env["GEODE_NAMESPACE"] = ns;
const conn = await connectGeode({ name: "bench-tools" });
const handlerConn = await connectGeode({ name: "bench-tools-handler" });
const procs: SpawnedProcess[] = [];

const rows: Array<{ label: string; seq: LatencySummary }> = [];
async function measure(label: string, fn: () => Promise<unknown>): Promise<LatencySummary> {
  progress(label);
  const seq = await measureSequential(N, fn, 200);
  rows.push({ label, seq });
  return seq;
}

try {
  // Raw floor: a responder on another connection, same payload size class as a tool call.
  const rawSubject = `${ns}.bench.raw`;
  handlerConn.nc.subscribe(rawSubject, {
    callback: (_e, m) => {
      m.respond(m.data);
    },
  });
  await handlerConn.nc.flush();
  const body = new TextEncoder().encode(JSON.stringify({ tool_name: "echo", arguments: { text: "hello" } }));
  const raw = await measure("raw NATS request/reply", () =>
    conn.nc.request(rawSubject, body, { timeout: 5_000 }),
  );

  // What a receipt costs at least: one KV create and one revision-checked update.
  const kv = await ensureBucket(conn.nc, conn.names, "toolReceipts");
  let k = 0;
  const kvPair = await measure("raw KV create + update (receipt floor)", async () => {
    const key = `floor.${k++}`;
    const rev = await kv.create(key, body);
    await kv.update(key, body, rev);
  });

  for (const [entry, ready] of [
    ["services/hook-dispatcher/src/main.ts", /hook-dispatcher started/],
    ["services/tool-executor/src/main.ts", /tool-executor started/],
  ] as const) {
    const p = spawnService(entry, env);
    procs.push(p);
    await p.waitForOutput(ready, 60_000);
  }
  const tools = createToolClient(conn);
  const hooks = createHookClient(conn.nc, conn.names);
  let seq = 0;
  const readCall = () =>
    tools.execute({
      tool_name: "echo",
      arguments: { text: "hello" },
      correlation: { session_id: "bench", tool_call_id: `r${seq++}` },
    });
  const writeCall = () =>
    tools.execute({
      tool_name: "fs.write",
      arguments: { path: "bench.txt", content: "hello" },
      correlation: { session_id: "bench", tool_call_id: `w${seq++}` },
    });
  const corr = correlation({ session_id: "bench", tool_call_id: "h" });
  const hookPair = async () => {
    await hooks.invoke(HookName.PreToolUse, { tool_name: "echo", arguments: { text: "hello" } }, corr);
    await hooks.invoke(
      HookName.PostToolUse,
      {
        tool_name: "echo",
        arguments: { text: "hello" },
        result: { text: "hello" },
        has_error: false,
        executed: true,
      },
      corr,
    );
  };
  await waitFor(
    () =>
      readCall().then(
        (r) => r.status === "completed",
        () => false,
      ),
    30_000,
  );

  // The terminals alone, in-process (their time is the tool's, not the executor's).
  const fsWrite = builtinTools(toolRoot).find((t) => t.definition.name === "fs.write")!;
  const idle = new AbortController().signal;
  const writeTerminal = await measure("fs.write terminal alone (in-process)", () =>
    fsWrite.run({ path: "bench.txt", content: "hello" }, { signal: idle }),
  );
  const hooks0 = await measure("hooks alone (Pre+Post), 0 handlers", hookPair);
  const read0 = await measure("read-only call, 0 handlers", readCall);
  const write0 = await measure("mutation + receipt, 0 handlers", writeCall);

  const handler = await serveHook(handlerConn, HookName.PreToolUse, { name: "bench-pre" }, () => ({
    action: "continue",
  }));
  await waitFor(
    async () =>
      (await hooks.invoke(HookName.PreToolUse, { tool_name: "echo", arguments: {} }, corr)).decision_sources
        .length === 1,
    30_000,
  );
  const hooks1 = await measure("hooks alone (Pre+Post), 1 PreToolUse handler", hookPair);
  const read1 = await measure("read-only call, 1 PreToolUse handler", readCall);
  const write1 = await measure("mutation + receipt, 1 PreToolUse handler", writeCall);
  await handler.close();

  const floor = raw.medianUs;
  process.stdout.write(
    `${table(
      ["case", "median", "p99", "×raw"],
      rows.map((r) => [
        r.label,
        fmtUs(r.seq.medianUs),
        fmtUs(r.seq.p99Us),
        (r.seq.medianUs / floor).toFixed(2),
      ]),
    )}\n\n`,
  );
  const overhead = (call: LatencySummary, hooksAlone: LatencySummary, terminal?: LatencySummary) =>
    (call.medianUs - hooksAlone.medianUs - (terminal?.medianUs ?? 0)) / floor;
  process.stdout.write(
    [
      "executor overhead = call median − hooks-alone median − terminal median, in raw round trips:",
      `  read-only, 0 handlers: ${overhead(read0, hooks0).toFixed(2)} (target < 3)`,
      `  read-only, 1 handler:  ${overhead(read1, hooks1).toFixed(2)} (target < 3)`,
      `  mutation + receipt, 0 handlers: ${overhead(write0, hooks0, writeTerminal).toFixed(2)} (target < 5)`,
      `  mutation + receipt, 1 handler:  ${overhead(write1, hooks1, writeTerminal).toFixed(2)} (target < 5)`,
      `mutation overhead beyond the receipt floor (raw KV create + update), 0 handlers: ${(
        (write0.medianUs - hooks0.medianUs - writeTerminal.medianUs - kvPair.medianUs) / floor
      ).toFixed(2)}`,
      `n=${N} sequential calls per case (after 200 warm-up calls)`,
    ].join("\n") + "\n",
  );
} finally {
  for (const p of procs.reverse()) await p.stop("SIGTERM", 5_000);
  await cleanupNamespace(await jetstreamManager(conn.nc, { checkAPI: false }), ns).catch(() => undefined);
  await handlerConn.close();
  await conn.close();
  rmSync(toolRoot, { recursive: true, force: true });
}
