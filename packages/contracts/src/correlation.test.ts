import { describe, expect, it } from "vitest";
import {
  CORRELATION_FIELDS,
  CorrelationInputSchema,
  CorrelationV1Schema,
  CorrelationV2Schema,
  correlation,
  safeCorrelation,
  safeCorrelationId,
  toCorrelationV1,
} from "./correlation.js";
import { HookInvokeRequestSchema, hookEnvelope } from "./hook-envelope.js";

const V2 = [
  "session_id",
  "turn_id",
  "step_id",
  "run_id",
  "session_generation",
  "verify_attempt",
  "tool_call_id",
  "llm_call_id",
  "llm_attempt_id",
];

describe("correlation", () => {
  it("has exactly 9 v2 fields and 8 v1 fields, in order", () => {
    expect(CORRELATION_FIELDS).toEqual(V2);
    expect(Object.keys(CorrelationV2Schema.shape)).toEqual(V2);
    expect(Object.keys(CorrelationV1Schema.shape)).toEqual(V2.filter((f) => f !== "step_id"));
  });

  it("fills left-out fields with empty strings and zeros, and refuses unknown fields", () => {
    expect(correlation({ session_id: "s" })).toEqual({
      session_id: "s",
      turn_id: "",
      step_id: "",
      run_id: "",
      session_generation: 0,
      verify_attempt: 0,
      tool_call_id: "",
      llm_call_id: "",
      llm_attempt_id: "",
    });
    expect(CorrelationInputSchema.safeParse({ tenant: "x" }).success).toBe(false);
    expect(CorrelationInputSchema.safeParse({ session_generation: -1 }).success).toBe(false);
    expect(CorrelationInputSchema.safeParse({ verify_attempt: 1.5 }).success).toBe(false);
  });

  it("requires every field when complete and refuses unknown ones", () => {
    const full = correlation();
    expect(CorrelationV2Schema.safeParse(full).success).toBe(true);
    const { step_id: _s, ...v1 } = full;
    expect(CorrelationV2Schema.safeParse(v1).success).toBe(false);
    expect(CorrelationV1Schema.safeParse(v1).success).toBe(true);
    expect(CorrelationV1Schema.safeParse(full).success).toBe(false);
    expect(CorrelationV2Schema.safeParse({ ...full, tenant: "x" }).success).toBe(false);
  });

  it("drops step_id for v1 envelopes and keeps the v2 field order", () => {
    const c = correlation({ session_id: "s", step_id: "st" });
    const v1 = toCorrelationV1(c);
    expect(Object.keys(v1)).toEqual(V2.filter((f) => f !== "step_id"));
    expect(c.step_id).toBe("st");
    const env = hookEnvelope("SessionEnd", c, { reason: "r", status: "completed" }, "v1");
    expect(env.schema_version).toBe("geode.public-hook.v1");
    expect(env.correlation).toEqual(v1);
    expect(hookEnvelope("SessionEnd", c, {}).schema_version).toBe("geode.public-hook.v2");
  });

  it("parses a hook invoke request with a partial correlation and refuses a bad timeout", () => {
    const req = HookInvokeRequestSchema.parse({
      correlation: { turn_id: "t" },
      payload: { user_input: "x" },
    });
    expect(req.correlation.turn_id).toBe("t");
    expect(req.correlation.session_generation).toBe(0);
    expect(HookInvokeRequestSchema.parse({ payload: {} }).correlation).toEqual(correlation());
    expect(HookInvokeRequestSchema.safeParse({ payload: {}, timeout_ms: -5 }).success).toBe(false);
    expect(HookInvokeRequestSchema.safeParse({ payload: {}, extra: 1 }).success).toBe(false);
  });
});

describe("safeCorrelationId", () => {
  const REDACTED = /^redacted-[0-9a-f]{24}$/;

  it("keeps plain ids as they came", () => {
    for (const id of [
      "",
      "s-1",
      "toolu_01A09q90qw90lq917835lq9",
      "6f1c2d9e-0d7a-4b8e-9c1a-2f3e4d5c6b7a",
      "a.b:c@d+e=f",
      "x".repeat(128),
    ])
      expect(safeCorrelationId(id)).toBe(id);
  });

  it("replaces secret-looking, long, path-like or odd ids by a stable digest", () => {
    const odd = [
      "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
      "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
      "password=hunter2",
      "x".repeat(129),
      "../etc",
      "a/b",
      ".hidden",
      "with space",
      "nul\u0000",
      "ümlaut",
    ];
    for (const id of odd) {
      expect(safeCorrelationId(id)).toMatch(REDACTED);
      expect(safeCorrelationId(id)).toBe(safeCorrelationId(id));
    }
    expect(new Set(odd.map(safeCorrelationId)).size).toBe(odd.length);
  });

  it("makes every id of a correlation safe and keeps the counters", () => {
    const c = correlation({
      session_id: "a/b",
      tool_call_id: "ok_1",
      session_generation: 3,
      verify_attempt: 1,
    });
    const safe = safeCorrelation(c);
    expect(safe.session_id).toMatch(REDACTED);
    expect(safe.tool_call_id).toBe("ok_1");
    expect(safe.session_generation).toBe(3);
    expect(safe.verify_attempt).toBe(1);
    expect(Object.keys(safe)).toEqual(CORRELATION_FIELDS);
  });
});
