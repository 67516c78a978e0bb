/**
 * Sanitize + validate (`validateHookPayload`) per call, for a realistic 1 KiB PreToolUse payload and
 * a 40 KiB PostToolUse payload (which the 32 KiB bound must cut), against a structured-copy
 * baseline (`JSON.parse(JSON.stringify(payload))`) of the same payload in the same run.
 * Target: the 1 KiB case under 20 µs median.
 * Then the wire decoders of the hot paths, each beside its schema's own pass (wire-decode.ts).
 * `BENCH_SCALE` (default 1) multiplies every number of calls (0.01: a run of a second or two).
 */
import { validateHookPayload } from "@geode/contracts";
import { fmtUs, type LatencySummary, measureSequential, progress, table } from "../lib/stats.js";
import { benchWireDecode } from "./wire-decode.js";

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");

/** A shell call as an agent would make it: command, env, a short script, a few options. */
function preToolUse1KiB(): Record<string, unknown> {
  return {
    tool_name: "shell.exec",
    arguments: {
      command: "pnpm --filter @geode/hook-dispatcher test -- --reporter=dot",
      cwd: "/srv/app/services/hook-dispatcher",
      timeout_ms: 120000,
      env: { NODE_ENV: "test", CI: "1", LOG_LEVEL: "warn", FORCE_COLOR: "0" },
      stdin: null,
      shell: "/bin/bash",
      user: "ci-runner",
      tty: false,
      capture: { stdout: true, stderr: true, max_bytes: 65536 },
      script: [
        "set -euo pipefail",
        "echo 'running the dispatcher tests against the local NATS server and Postgres'",
        "pnpm install --frozen-lockfile --prefer-offline > /dev/null",
        "pnpm --filter @geode/hook-dispatcher exec vitest run --reporter=dot --bail=1",
        "echo done",
      ],
      labels: ["ci", "dispatcher", "tests"],
      retry: { attempts: 2, backoff_ms: 500 },
      description:
        "Run the hook-dispatcher unit and integration tests after the rewrite of the handler chain; report failures with the test name and the first assertion message.",
      notes:
        "The user asked to keep the output short, to stop at the first failure and to skip the slow end-to-end suite.",
    },
  };
}

/** A file read whose result carries ~40 KiB of text over 10 fields (the bound cuts it to 32 KiB). */
function postToolUse40KiB(): Record<string, unknown> {
  const line = "2026-11-30T03:35:08Z INFO hook-dispatcher handler=ci-gate status=ok duration_ms=12 ";
  const chunk = line.repeat(Math.ceil(4070 / line.length)).slice(0, 4070);
  return {
    tool_name: "fs.read",
    arguments: { path: "logs/dispatcher.log", offset: 0, limit: 40960 },
    result: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`part_${i}`, chunk])),
    has_error: false,
    executed: true,
  };
}

interface Case {
  label: string;
  hook: "PreToolUse" | "PostToolUse";
  payload: Record<string, unknown>;
  n: number;
}

const SCALE = Number(process.env["BENCH_SCALE"] ?? 1);
const calls = (n: number) => Math.max(10, Math.round(n * SCALE));

const cases: Case[] = [
  { label: "PreToolUse", hook: "PreToolUse", payload: preToolUse1KiB(), n: calls(20_000) },
  { label: "PostToolUse", hook: "PostToolUse", payload: postToolUse40KiB(), n: calls(2_000) },
];

const rows: string[][] = [];
const results: Array<{ label: string; sv: LatencySummary }> = [];
for (const c of cases) {
  const check = validateHookPayload(c.hook, c.payload);
  if (!check.ok) throw new Error(`${c.label}: ${check.error}`);
  progress(`${c.label} ${bytes(c.payload)} B → ${bytes(check.payload)} B, ${c.n} calls`);
  const baseline = await measureSequential(c.n, () => JSON.parse(JSON.stringify(c.payload)), calls(1000));
  const sv = await measureSequential(c.n, () => validateHookPayload(c.hook, c.payload), calls(1000));
  results.push({ label: c.label, sv });
  rows.push([
    `${c.label} ${(bytes(c.payload) / 1024).toFixed(1)} KiB`,
    String(c.n),
    fmtUs(sv.medianUs),
    fmtUs(sv.p99Us),
    fmtUs(baseline.medianUs),
    fmtUs(baseline.p99Us),
    `${(sv.medianUs / baseline.medianUs).toFixed(1)}×`,
  ]);
}

process.stdout.write(
  `${table(
    ["payload", "calls", "sanitize+validate median", "p99", "JSON copy median", "p99", "ratio (median)"],
    rows,
  )}\n`,
);
const small = results[0]!.sv.medianUs;
process.stdout.write(`\ntarget: 1 KiB median < 20 µs: ${small < 20 ? "met" : "MISSED"} (${fmtUs(small)})\n`);

benchWireDecode(calls(2_000));
