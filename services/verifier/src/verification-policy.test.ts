import type { AttributedDecision, BuiltInResult } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { applyBudget, collectEvidence, postVerifyPolicy, stopPolicy } from "./verification-policy.js";

const pass: BuiltInResult = {
  passed: true,
  mode: "rule_based",
  score: 1,
  rubric_misses: [],
  should_retry: false,
};
const retryable: BuiltInResult = {
  ...pass,
  passed: false,
  score: 0.5,
  rubric_misses: ["empty_candidate"],
  should_retry: true,
};
const fatal: BuiltInResult = { ...retryable, rubric_misses: ["termination:error"], should_retry: false };
const d = (action: string, extra: Partial<AttributedDecision> = {}): AttributedDecision => ({
  handler: `h_${action}`,
  action: action as AttributedDecision["action"],
  ...extra,
});

describe("PostVerify policy", () => {
  it("without decisions: pass → accept, retryable → revise with the default instruction, other → escalate", () => {
    expect(postVerifyPolicy(pass, []).action).toBe("accept");
    const r = postVerifyPolicy(retryable, []);
    expect(r.action).toBe("revise");
    expect(r.instruction).toContain("must not be empty");
    expect(r.fallback).toMatchObject({ handler: "runtime_default", action: "revise", surface: "PostVerify" });
    expect(postVerifyPolicy(fatal, []).action).toBe("escalate");
  });

  it("escalate wins over revise and accept", () => {
    expect(
      postVerifyPolicy(pass, [d("accept"), d("revise", { instruction: "x" }), d("escalate")]).action,
    ).toBe("escalate");
  });

  it("an accept of a failed built-in result escalates: a hook cannot turn a failure into a pass", () => {
    expect(postVerifyPolicy(retryable, [d("accept")]).action).toBe("escalate");
  });

  it("a blocked outcome (closed guard failed) escalates", () => {
    expect(postVerifyPolicy(pass, [], true).action).toBe("escalate");
  });

  it("revise carries the handlers' instructions", () => {
    const r = postVerifyPolicy(pass, [d("revise", { instruction: "add units" }), d("accept")]);
    expect(r).toEqual({ action: "revise", instruction: "add units" });
  });

  it("accepts a passed result when every decision accepts", () => {
    expect(postVerifyPolicy(pass, [d("accept")]).action).toBe("accept");
  });
});

describe("budget and Stop", () => {
  it("a revise at attempt 2 or later becomes escalate_budget_exhausted, without an instruction", () => {
    expect(applyBudget({ action: "revise", instruction: "x" }, 1)).toEqual({
      action: "revise",
      instruction: "x",
    });
    expect(applyBudget({ action: "revise", instruction: "x" }, 2)).toEqual({
      action: "escalate_budget_exhausted",
    });
    expect(applyBudget({ action: "accept" }, 5)).toEqual({ action: "accept" });
  });

  it("Stop continue turns an accept into continue, but is ignored after an escalation", () => {
    const cont = d("continue", { instruction: "also check the tests" });
    expect(stopPolicy({ action: "accept" }, [cont], 0).result).toEqual({
      action: "continue",
      instruction: "also check the tests",
    });
    const parked = stopPolicy({ action: "escalate" }, [cont], 0);
    expect(parked.result.action).toBe("escalate");
    expect(parked.ignored).toHaveLength(1);
    expect(stopPolicy({ action: "accept" }, [cont], 2).result.action).toBe("escalate_budget_exhausted");
    expect(stopPolicy({ action: "accept" }, [d("finalize")], 2).result.action).toBe("accept");
  });

  it("collects evidence once per reference", () => {
    const ref = { kind: "sil_eval" as const, schema_id: "s", authority: "a", reference: "r" };
    expect(collectEvidence([{ evidence_refs: [ref] }, { evidence_refs: [ref] }, {}])).toEqual([ref]);
  });
});
