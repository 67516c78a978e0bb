import { describe, expect, it } from "vitest";
import {
  CORRELATION_FIELDS,
  CorrelationInputSchema,
  CorrelationV1Schema,
  CorrelationV2Schema,
  correlation,
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
