/**
 * `pnpm bench cli`: how fast the compiled `geode` command answers, each run a fresh process as an
 * operator's shell or a coding agent's command hook starts it, against a bare `node -e 0` in the
 * same run (the floor no Node CLI can beat). Targets: `--version` and `--help` ≤ 2 × the bare
 * start; `health` against a running plane ≤ 0.6 s; one `hook-shim` round trip (its HTTP call to
 * the agent gateway and the hook behind it included) ≤ 0.25 s. The TypeScript sources through tsx
 * (what `geode` was before it was compiled) are timed once for comparison.
 */
import { spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import path from "node:path";
import { connectGeode, ensureBucket } from "@geode/bus";
import { sha256 } from "@geode/contracts";
import { cleanupNamespace, GEODE_BIN, REPO_ROOT, type SpawnedProcess, spawnService } from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { progress, summarize, table } from "../lib/stats.js";

const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 15);
const SERVICES = ["hook-dispatcher", "tool-executor", "verifier", "activity-recorder", "agent-gateway"];

const ns = `bench_cli_${randomBytes(3).toString("hex")}`;
const env: Record<string, string> = {
  NATS_URL: process.env["NATS_URL"] ?? "nats://127.0.0.1:4222",
  DATABASE_URL: process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test",
  GEODE_NAMESPACE: ns,
  GEODE_GATEWAY_ADDR: "127.0.0.1:0",
  GEODE_METRICS_PORT: "0",
  LOG_LEVEL: "info",
};
process.env["GEODE_NAMESPACE"] = ns;

/** Wall time of one process from spawn to exit, in µs; rejects on a non-zero exit. */
function timed(args: string[], extraEnv: Record<string, string> = {}, stdin = ""): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, args, {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env, ...extraEnv },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    child.once("exit", (code) => {
      const us = Number(process.hrtime.bigint() - started) / 1_000;
      if (code === 0) resolve(us);
      else reject(new Error(`${args.join(" ")} exited ${code}:\n${out}`));
    });
    child.stdin.end(stdin);
  });
}

const procs: SpawnedProcess[] = [];
const conn = await connectGeode({ name: "bench-cli" });
try {
  progress("building (tsc -b) and starting the five services");
  for (const service of SERVICES) {
    const p = spawnService(`services/${service}/src/main.ts`, env);
    procs.push(p);
    await p.waitForOutput(new RegExp(`${service} (started|listening on)`), 60_000);
  }
  const gateway = procs.at(-1) as SpawnedProcess;
  const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(gateway.output())?.[1];
  if (!url) throw new Error(`the gateway said no address:\n${gateway.output()}`);
  const token = `geode_agent_${randomBytes(32).toString("base64url")}`;
  const agents = await ensureBucket(conn.nc, conn.names, "agents");
  await agents.put(
    "bench",
    JSON.stringify({ name: "bench", token_sha256: sha256(token), created_at: Date.now() }),
  );

  const sessionId = randomUUID();
  const shimInput = JSON.stringify({
    session_id: sessionId,
    transcript_path: `/home/dev/.claude/projects/-home-dev-src/${sessionId}.jsonl`,
    cwd: "/home/dev/src",
    hook_event_name: "PreToolUse",
    tool_name: "Bash",
    tool_input: { command: "ls", description: "List files" },
    tool_use_id: "toolu_01Bench",
  });
  const shimEnv = { GEODE_GATEWAY_URL: url, GEODE_AGENT_TOKEN: token };
  const cases: Array<[string, () => Promise<number>]> = [
    ["node -e 0 (bare Node start)", () => timed(["-e", "0"])],
    ["geode --version", () => timed([GEODE_BIN, "--version"])],
    ["geode --help", () => timed([GEODE_BIN, "--help"])],
    ["geode health (5 services)", () => timed([GEODE_BIN, "health"])],
    ["geode hook-shim (PreToolUse round trip)", () => timed([GEODE_BIN, "hook-shim"], shimEnv, shimInput)],
  ];
  for (const [, run] of cases) await run(); // warm the file cache and the session
  const samples = new Map<string, number[]>(cases.map(([name]) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 5 === 0) progress(`round ${round + 1} of ${ROUNDS}`);
    // Interleaved, so a shared machine's load swings alike over every case.
    for (const [name, run] of cases) samples.get(name)?.push(await run());
  }
  progress("the TypeScript sources through tsx, for comparison (3 runs)");
  const tsxArgs = [
    "--import",
    "tsx",
    "--conditions=geode-source",
    path.join(REPO_ROOT, "packages/cli/src/main.ts"),
  ];
  const fromSource: number[] = [];
  for (let i = 0; i < 3; i++) fromSource.push(await timed([...tsxArgs, "--help"]));

  const median = (name: string) => summarize(samples.get(name) ?? []).medianUs;
  const floor = median("node -e 0 (bare Node start)");
  const rows = [...samples.keys()].map((name) => {
    const s = summarize(samples.get(name) ?? []);
    return [
      name,
      `${(s.medianUs / 1_000).toFixed(0)} ms`,
      `${(s.p99Us / 1_000).toFixed(0)} ms`,
      (s.medianUs / floor).toFixed(2),
    ];
  });
  const src = summarize(fromSource).medianUs;
  rows.push([
    "geode --help from the sources (tsx)",
    `${(src / 1_000).toFixed(0)} ms`,
    "",
    (src / floor).toFixed(2),
  ]);
  process.stdout.write(`${table(["case", "median", "p99", "× node -e 0"], rows)}\n\n`);

  const line = (label: string, value: string, target: string, met: boolean) =>
    process.stdout.write(`${label}: ${value} (target ${target}) ${met ? "met" : "NOT met"}\n`);
  const version = median("geode --version") / floor;
  const help = median("geode --help") / floor;
  const health = median("geode health (5 services)") / 1_000_000;
  const shim = median("geode hook-shim (PreToolUse round trip)") / 1_000_000;
  line("geode --version / node -e 0", version.toFixed(2), "≤ 2", version <= 2);
  line("geode --help / node -e 0", help.toFixed(2), "≤ 2", help <= 2);
  line("geode health, median", `${health.toFixed(3)} s`, "≤ 0.6 s", health <= 0.6);
  line("geode hook-shim round trip, median", `${shim.toFixed(3)} s`, "≤ 0.25 s", shim <= 0.25);
  process.stdout.write(`${ROUNDS} rounds, each case once per round, interleaved\n`);
} finally {
  for (const p of procs.reverse()) await p.stop("SIGTERM");
  await cleanupNamespace(await jetstreamManager(conn.nc), ns, env["DATABASE_URL"]);
  await conn.close();
}
