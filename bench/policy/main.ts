/**
 * `pnpm bench policy`: a PreToolUse through a hook-dispatcher process answered by a policy-guard
 * process with all five packs loaded, against the same call answered by an echo handler registered
 * the same way (bench/policy/handler.ts), each in a namespace of its own, in one run (the cases take
 * turns 20 calls at a time); then the evaluations per second of one guard: the engine alone in
 * this process, and the guard process answering its handler subject directly at 64 callers. The
 * floor: the same guard process with no policy set (it answers without calling Cedar) and Cedar's
 * own cost per call with one trivial policy, so a missed target says how much of it is Cedar's.
 */
import { randomBytes } from "node:crypto";
import { correlation, HookName, hookEnvelope, names, policyRecord } from "@geode/contracts";
import { checkPolicySet, PolicyEngine, packNames, packText, schemaText } from "@geode/policy";
import { connectGeode, createHookClient } from "@geode/runtime";
import { PolicyStore } from "@geode/state";
import { cleanupNamespace, type SpawnedProcess, spawnService, waitFor } from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import {
  fmtLoad,
  fmtRate,
  fmtUs,
  measureThroughput,
  progress,
  summarize,
  table,
  warmThenInterleave,
} from "../lib/stats.js";

const SEQUENTIAL = Number(process.env["BENCH_N"] ?? 2_000);
const WARMUP = Number(process.env["BENCH_WARMUP"] ?? 2_000);
const THROUGHPUT_TOTAL = Number(process.env["BENCH_TOTAL"] ?? 6_000);
const PER_ROUND = 20;
const TARGET = 1.3;

const run = randomBytes(3).toString("hex");
const nsGuard = `bench_policy_guard_${run}`;
const nsEcho = `bench_policy_echo_${run}`;
const nsEmpty = `bench_policy_empty_${run}`;
const natsUrl = process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
const conn = await connectGeode({ name: "bench-policy" });
const procs: SpawnedProcess[] = [];
const spawn = async (entry: string, ready: RegExp, ns: string) => {
  const p = spawnService(entry, { NATS_URL: natsUrl, LOG_LEVEL: "info", GEODE_NAMESPACE: ns }, []);
  procs.push(p);
  await p.waitForOutput(ready, 60_000);
  return p;
};
/** A call every pack evaluates in full and none refuses. */
const payload = { tool_name: "Bash", arguments: { command: "npm test -- --run src/index.test.ts" } };
const corr = correlation({ session_id: "bench", turn_id: "t" });

/** One policy that compares one string: what a call into Cedar costs with (almost) no policy work. */
const TRIVIAL = `@id("trivial")
forbid (principal, action == Geode::Action::"call_tool", resource)
when { context has command && context.command == "never" };`;

/** Evaluations per second of the engine alone, for `ms`: the five packs, or one trivial policy. */
function engineRate(ms: number, trivial = false): number {
  const schema = schemaText();
  const engine = new PolicyEngine(
    trivial
      ? [checkPolicySet("trivial", TRIVIAL, "enforce", schema)]
      : packNames().map((p) => checkPolicySet(p, packText(p) ?? "", "enforce", schema)),
  );
  const caller = { agent: "bench", agentKind: "claude-code" as const, groups: ["staff"] };
  for (let i = 0; i < 2_000; i++) engine.evaluate("PreToolUse", payload, "bench", caller);
  const end = performance.now() + ms;
  let n = 0;
  while (performance.now() < end) {
    engine.evaluate("PreToolUse", payload, "bench", caller);
    n++;
  }
  return (n * 1000) / ms;
}

try {
  const store = await PolicyStore.open({ nc: conn.nc, names: names(nsGuard) });
  for (const p of packNames()) {
    const text = packText(p) ?? "";
    await store.put(policyRecord(p, text, "enforce", "bench"));
  }
  await spawn("services/policy-guard/src/main.ts", /policy-guard started/, nsGuard);
  await spawn("services/policy-guard/src/main.ts", /policy-guard started/, nsEmpty);
  await spawn("bench/policy/handler.ts", /ready/, nsEcho);
  const invokers: Array<[string, () => Promise<unknown>]> = [];
  for (const [label, ns] of [
    ["PreToolUse answered by the policy-guard, five packs", nsGuard],
    ["PreToolUse answered by an echo handler", nsEcho],
    ["PreToolUse answered by the policy-guard, no policy set (the floor: no Cedar call)", nsEmpty],
  ] as const) {
    await spawn("services/hook-dispatcher/src/main.ts", /hook-dispatcher started/, ns);
    const hooks = createHookClient(conn.nc, names(ns));
    const invoke = () => hooks.invoke(HookName.PreToolUse, payload, corr);
    // Ready: the guard blocks `rm -rf` (its packs are loaded); the echo handler answers with no error.
    const rm = { tool_name: "Bash", arguments: { command: "rm -rf /" } };
    await waitFor(async () => {
      const out = await hooks.invoke(HookName.PreToolUse, rm, corr).catch(() => null);
      return ns === nsGuard ? out?.blocked : out !== null && out.handler_errors.length === 0;
    }, 30_000);
    invokers.push([label, invoke]);
  }
  const { samples, rounds } = await warmThenInterleave(
    invokers.map(([, fn]) => fn),
    { warmup: WARMUP, sequential: SEQUENTIAL, perRound: PER_ROUND },
  );
  const [guard, echo, empty] = samples.map((s) => summarize(s)) as [
    ReturnType<typeof summarize>,
    ReturnType<typeof summarize>,
    ReturnType<typeof summarize>,
  ];

  progress("the guard process on its handler subject, 64 callers");
  const subject = names(nsGuard).hookHandler(HookName.PreToolUse, "policy");
  const envelope = new TextEncoder().encode(JSON.stringify(hookEnvelope(HookName.PreToolUse, corr, payload)));
  const direct = () => conn.nc.request(subject, envelope, { timeout: 30_000 });
  for (let i = 0; i < 1_000; i++) await direct();
  const guardRate = await measureThroughput(THROUGHPUT_TOTAL, 64, direct);
  progress("the engine alone, 3 s");
  const engine = engineRate(3_000);
  const trivialEngine = engineRate(2_000, true);

  const ratio = guard.medianUs / echo.medianUs;
  process.stdout.write(
    `${table(
      ["case", "median", "p99"],
      [
        [invokers[0]![0], fmtUs(guard.medianUs), fmtUs(guard.p99Us)],
        [invokers[1]![0], fmtUs(echo.medianUs), fmtUs(echo.p99Us)],
        [invokers[2]![0], fmtUs(empty.medianUs), fmtUs(empty.p99Us)],
      ],
    )}\n\n`,
  );
  process.stdout.write(
    [
      `target: policy-guard median / echo handler median: ${ratio.toFixed(2)} (target ≤ ${TARGET.toFixed(2)}): ${ratio <= TARGET ? "met" : "not met"}`,
      `evaluations per second of one guard process on its handler subject (64 callers, ${THROUGHPUT_TOTAL} calls): ${fmtRate(guardRate)}`,
      `evaluations per second of the engine alone (five packs, one thread): ${fmtRate(engine)} (${fmtUs(1e6 / engine)} each); with one trivial policy: ${fmtUs(1e6 / trivialEngine)} each (Cedar's fixed cost per call)`,
      `floor: the guard with no policy set / echo handler: ${(empty.medianUs / echo.medianUs).toFixed(2)}; the guard's added median ${fmtUs(guard.medianUs - echo.medianUs)}, of which the guard without Cedar ${fmtUs(empty.medianUs - echo.medianUs)}`,
      `${rounds * PER_ROUND} sequential calls per case, interleaved in rounds of ${PER_ROUND} after ${WARMUP} warm-up calls each; load average at the end: ${fmtLoad()}`,
    ].join("\n") + "\n",
  );
} finally {
  for (const p of procs.reverse()) await p.stop("SIGTERM", 5_000);
  const jsm = await jetstreamManager(conn.nc, { checkAPI: false });
  for (const ns of [nsGuard, nsEcho, nsEmpty]) await cleanupNamespace(jsm, ns).catch(() => undefined);
  await conn.close();
}
