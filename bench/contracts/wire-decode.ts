/**
 * The wire decoders on the plane's hot paths, per call: each leg's codec on the body its own
 * client sends (the hook client's invoke request, the dispatcher's envelope and outcome, a
 * handler's reply, a runtime's tool call and finalize request), `correlation()` of a complete
 * correlation, and the projection's decode of one event and one timeline message (JSON parse,
 * envelope check, sanitizer, row). Beside each: its schema's own pass (`safeParse`) on the same
 * body, the cost the fast path saves. Calls are timed in groups of `GROUP` (a single call is
 * near the timer's resolution).
 */
import {
  correlation,
  HookHandlerLeg,
  HookInvokeLeg,
  hookEnvelope,
  ToolExecuteLeg,
  VerifyFinalizeLeg,
} from "@geode/contracts";
import { decodeStreamMessage } from "@geode/projection";
import { type LatencySummary, progress, summarize, table } from "../lib/stats.js";

const GROUP = 100;

/** Per-call latency in µs of `fn`, from `samples` groups of GROUP calls after a warm-up. */
function perCall(fn: () => unknown, samples: number): LatencySummary {
  for (let i = 0; i < 200 * GROUP; i++) fn();
  const out: number[] = new Array(samples);
  for (let s = 0; s < samples; s++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < GROUP; i++) fn();
    out[s] = Number(process.hrtime.bigint() - t0) / 1_000 / GROUP;
  }
  return summarize(out);
}

const ns = (us: number) => `${Math.round(us * 1000).toLocaleString("en-US")} ns`;

const full = correlation({
  session_id: "6f1c2d9e-0d7a-4b8e-9c1a-2f3e4d5c6b7a",
  turn_id: "turn-12",
  step_id: "step-3",
  run_id: "run-2026-12-01",
  session_generation: 1,
  tool_call_id: "toolu_01A09q90qw90lq917835lq9",
});
const payload = {
  tool_name: "shell.exec",
  arguments: { command: "pnpm test", cwd: "/srv/app", timeout_ms: 120000, env: { CI: "1" } },
};
const outcome = {
  ...hookEnvelope("PreToolUse", full, payload),
  decisions: [
    { handler: "guard", action: "continue" },
    { handler: "policy", action: "block", reason: "no shell", instruction: "ask first" },
  ],
  decision_sources: ["guard", "policy"],
  handler_errors: [],
  blocked: true,
};
const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const event = encode({
  id: "0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b",
  event: "tool_exec_ended",
  ts: 1_764_590_000_000,
  source: "tool-executor",
  correlation: full,
  payload: { tool_name: "fs.read", duration_ms: 12.5, has_error: false, bytes: 4096, note: "ok" },
});
const timeline = encode({
  id: "0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7c",
  kind: "tool.completed",
  ts: 1_764_590_000_000,
  source: "tool-executor",
  correlation: full,
  payload: { tool_name: "fs.read", has_error: false },
  payload_sha256: "0".repeat(64),
});

interface Case {
  label: string;
  decode: () => unknown;
  /** The schema's own pass on the same body; null where the case is more than a schema pass. */
  schema: (() => unknown) | null;
}

const cases: Case[] = [
  ((body) => ({
    label: "hook invoke request",
    decode: () => HookInvokeLeg.request.decode(body),
    schema: () => HookInvokeLeg.request.schema.safeParse(body),
  }))({ correlation: full, payload, timeout_ms: 30_000 }),
  ((body) => ({
    label: "handler envelope",
    decode: () => HookHandlerLeg.request.decode(body),
    schema: () => HookHandlerLeg.request.schema.safeParse(body),
  }))(hookEnvelope("PreToolUse", full, payload)),
  {
    label: "dispatch outcome",
    decode: () => HookInvokeLeg.reply.decode(outcome),
    schema: () => HookInvokeLeg.reply.schema.safeParse(outcome),
  },
  ((body) => ({
    label: "handler reply",
    decode: () => HookHandlerLeg.reply.decode(body),
    schema: () => HookHandlerLeg.reply.schema.safeParse(body),
  }))({ decision: { action: "continue" } }),
  ((body) => ({
    label: "tool execute request",
    decode: () => ToolExecuteLeg.request.decode(body),
    schema: () => ToolExecuteLeg.request.schema.safeParse(body),
  }))({ tool_name: "fs.read", arguments: { path: "README.md" }, correlation: full, operation_key: "op-1" }),
  ((body) => ({
    label: "verify finalize request",
    decode: () => VerifyFinalizeLeg.request.decode(body),
    schema: () => VerifyFinalizeLeg.request.schema.safeParse(body),
  }))({
    correlation: full,
    candidate: { text: "done", termination_reason: "completed", rounds: 2, tool_call_count: 3 },
  }),
  { label: "correlation() of a complete one", decode: () => correlation(full), schema: null },
  {
    label: "event message (projection decode)",
    decode: () => decodeStreamMessage("events", 1, event),
    schema: null,
  },
  {
    label: "timeline message (projection decode)",
    decode: () => decodeStreamMessage("timeline", 1, timeline),
    schema: null,
  },
];

/** Prints the table of the wire decoders. */
export function benchWireDecode(samples = 2_000): void {
  const rows: string[][] = [];
  for (const c of cases) {
    progress(`${c.label}: ${samples} × ${GROUP} calls`);
    const d = perCall(c.decode, samples);
    const s = c.schema ? perCall(c.schema, samples) : null;
    rows.push([
      c.label,
      ns(d.medianUs),
      ns(d.p99Us),
      s ? ns(s.medianUs) : "-",
      s ? `${(s.medianUs / d.medianUs).toFixed(1)}×` : "-",
    ]);
  }
  process.stdout.write(
    `\n${table(["decode", "per call median", "p99", "schema pass median", "schema / decode"], rows)}\n`,
  );
}
