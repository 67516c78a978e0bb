import { describe, expect, it } from "vitest";
import { closedFailureAction, DECISION_LIMITS, isStoppingAction, validateDecision } from "./decision.js";
import { ALLOWED_ACTIONS, HOOK_ACTIONS, HOOK_NAMES } from "./hook-name.js";

const ref = (i: number) => ({
  kind: "sil_eval",
  schema_id: "sil.v1",
  authority: "ci",
  reference: `run-${i}`,
});

function ok(result: ReturnType<typeof validateDecision>) {
  if (!result.ok) throw new Error(`expected a valid decision, got: ${result.error}`);
  return result.decision;
}

describe("validateDecision: rules and their exact messages", () => {
  it("treats null (and undefined) as no decision", () => {
    expect(validateDecision("PreToolUse", null)).toEqual({ ok: true, decision: null });
    expect(validateDecision("Stop", undefined)).toEqual({ ok: true, decision: null });
  });

  it("accepts exactly each hook's allowed actions and names the others", () => {
    for (const hook of HOOK_NAMES) {
      for (const action of HOOK_ACTIONS) {
        const allowed = (ALLOWED_ACTIONS[hook] as readonly string[]).includes(action);
        const decision = { action, reason: "r" };
        // Rules that need extra fields are covered below; give them what they need here.
        if (action === "rewrite") Object.assign(decision, { updates: { x: 1 } });
        if (action === "strengthen") Object.assign(decision, { additional_misses: ["m"] });
        if ((hook === "PostVerify" && action === "revise") || (hook === "Stop" && action === "continue"))
          Object.assign(decision, { instruction: "do it" });
        const result = validateDecision(hook, decision);
        if (allowed) expect(result.ok, `${hook} ${action}`).toBe(true);
        else expect(result).toEqual({ ok: false, error: `${action} is not allowed for ${hook}` });
      }
    }
  });

  it("refuses accept for UserPromptSubmit", () => {
    expect(validateDecision("UserPromptSubmit", { action: "accept" })).toEqual({
      ok: false,
      error: "accept is not allowed for UserPromptSubmit",
    });
  });

  it("requires non-empty updates for rewrite", () => {
    const expected = { ok: false, error: "rewrite requires non-empty updates" };
    expect(validateDecision("PreToolUse", { action: "rewrite" })).toEqual(expected);
    expect(validateDecision("UserPromptSubmit", { action: "rewrite", updates: {} })).toEqual(expected);
    expect(
      ok(validateDecision("UserPromptSubmit", { action: "rewrite", updates: { user_input: "hi" } })),
    ).toEqual({
      action: "rewrite",
      updates: { user_input: "hi" },
    });
  });

  it("allows updates only with rewrite", () => {
    const expected = { ok: false, error: "updates are only allowed for rewrite decisions" };
    expect(validateDecision("PreToolUse", { action: "continue", updates: { tool_name: "x" } })).toEqual(
      expected,
    );
    expect(validateDecision("PreToolUse", { action: "block", updates: {} })).toEqual(expected);
  });

  it("requires an instruction for PostVerify revise", () => {
    const expected = { ok: false, error: "PostVerify revise requires an instruction" };
    expect(validateDecision("PostVerify", { action: "revise" })).toEqual(expected);
    expect(validateDecision("PostVerify", { action: "revise", instruction: "" })).toEqual(expected);
    expect(ok(validateDecision("PostVerify", { action: "revise", instruction: "add tests" }))).toEqual({
      action: "revise",
      instruction: "add tests",
    });
  });

  it("requires an instruction for Stop continue", () => {
    expect(validateDecision("Stop", { action: "continue", reason: "not done" })).toEqual({
      ok: false,
      error: "Stop continue requires an instruction",
    });
    expect(ok(validateDecision("Stop", { action: "continue", instruction: "finish" }))?.instruction).toBe(
      "finish",
    );
    // continue needs no instruction on other hooks.
    expect(ok(validateDecision("PreToolUse", { action: "continue" }))).toEqual({ action: "continue" });
  });

  it("requires additional_misses for PreVerify strengthen, also when only an instruction is given", () => {
    const expected = { ok: false, error: "PreVerify strengthen requires additional_misses" };
    expect(validateDecision("PreVerify", { action: "strengthen" })).toEqual(expected);
    expect(validateDecision("PreVerify", { action: "strengthen", instruction: "be stricter" })).toEqual(
      expected,
    );
    expect(validateDecision("PreVerify", { action: "strengthen", additional_misses: [] })).toEqual(expected);
    expect(
      ok(validateDecision("PreVerify", { action: "strengthen", additional_misses: ["missing:docs"] })),
    ).toEqual({ action: "strengthen", additional_misses: ["missing:docs"] });
  });

  it("refuses a decision field outside the decision schema", () => {
    const result = validateDecision("PreToolUse", { action: "continue", confidence: 0.9 });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain("confidence");
  });

  it("refuses a decision that is not an object, has no action or has wrongly typed fields", () => {
    for (const raw of ["continue", 1, [], { reason: "no action" }, { action: "" }]) {
      expect(validateDecision("PreToolUse", raw).ok, JSON.stringify(raw)).toBe(false);
    }
    expect(validateDecision("PreToolUse", { action: "block", reason: 5 }).ok).toBe(false);
    expect(validateDecision("Stop", { action: "continue", instruction: ["x"] }).ok).toBe(false);
    expect(validateDecision("PreVerify", { action: "strengthen", additional_misses: [1] }).ok).toBe(false);
    expect(validateDecision("PreToolUse", { action: "rewrite", updates: ["x"] }).ok).toBe(false);
    expect(validateDecision("Stop", { action: "finalize", evidence_refs: [{ kind: "gossip" }] }).ok).toBe(
      false,
    );
  });
});

describe("validateDecision: cuts instead of refusing", () => {
  it("cuts reason to 1,024 and instruction to 4,096 characters", () => {
    const d = ok(
      validateDecision("PostVerify", {
        action: "revise",
        reason: "r".repeat(2000),
        instruction: "i".repeat(5000),
      }),
    );
    expect(d?.reason).toBe(`${"r".repeat(1024)}…[truncated:976]`);
    expect(d?.instruction).toBe(`${"i".repeat(4096)}…[truncated:904]`);
    expect(DECISION_LIMITS.reasonChars).toBe(1024);
    expect(DECISION_LIMITS.instructionChars).toBe(4096);
  });

  it("cuts additional_misses to 32 items of 128 characters", () => {
    const misses = Array.from({ length: 40 }, (_, i) => `${i}:${"m".repeat(200)}`);
    const d = ok(validateDecision("PreVerify", { action: "strengthen", additional_misses: misses }));
    expect(d?.additional_misses).toHaveLength(32);
    expect(d?.additional_misses?.[0]).toBe(`0:${"m".repeat(126)}…[truncated:74]`);
    expect(d?.additional_misses?.[31]?.startsWith("31:")).toBe(true);
  });

  it("cuts evidence_refs to 32 items with fields of 512 characters", () => {
    const refs = Array.from({ length: 40 }, (_, i) => ({ ...ref(i), reference: `${i}-${"x".repeat(600)}` }));
    const d = ok(validateDecision("Stop", { action: "finalize", evidence_refs: refs }));
    expect(d?.evidence_refs).toHaveLength(32);
    expect(d?.evidence_refs?.[0]?.reference).toBe(`0-${"x".repeat(510)}…[truncated:90]`);
    expect(d?.evidence_refs?.[0]?.kind).toBe("sil_eval");
    // The caller's array is not touched.
    expect(refs).toHaveLength(40);
    expect(refs[0]?.reference).toHaveLength(602);
  });

  it("masks secrets in reasons and sanitizes updates", () => {
    const d = ok(
      validateDecision("PreToolUse", {
        action: "rewrite",
        reason: "blocked token=abcd1234secret",
        updates: { arguments: { path: "a", Password: "p" } },
      }),
    );
    expect(d?.reason).toBe("blocked token=[REDACTED]");
    expect(d?.updates).toEqual({ arguments: { path: "a", _redacted_fields: ["Password"] } });
  });
});

describe("chain helpers", () => {
  it("block and deny stop the chain; closed failures block, or deny for PermissionRequest", () => {
    expect(isStoppingAction("block")).toBe(true);
    expect(isStoppingAction("deny")).toBe(true);
    expect(isStoppingAction("continue")).toBe(false);
    expect(isStoppingAction("ask")).toBe(false);
    expect(closedFailureAction("PermissionRequest")).toBe("deny");
    expect(closedFailureAction("PreToolUse")).toBe("block");
  });
});
