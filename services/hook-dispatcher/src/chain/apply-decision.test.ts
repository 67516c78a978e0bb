import { guardedArguments } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { applyDecision } from "./apply-decision.js";
import { chainView, handler } from "./chain-fixture.js";

const pre = { tool_name: "fs.write", arguments: { path: "a" } };
const view = chainView("PreToolUse", pre);

describe("applyDecision", () => {
  it("null is no decision: audited ok, nothing added, never a continue", () => {
    expect(applyDecision(view, handler("PreToolUse", "h"), null)).toEqual({
      handler: "h",
      status: "ok",
      reason: "",
      blocks: false,
    });
  });

  it("a rewrite is merged and validated again, the guarded fields with it; the view is left as it was", () => {
    const updates = { arguments: { path: "b" } };
    const guarded = guardedArguments("fs.write", pre.arguments);
    const step = applyDecision(
      chainView("PreToolUse", pre, guarded),
      handler("PreToolUse", "fixer"),
      { action: "rewrite", updates },
      "moved to b",
    );
    expect(step).toMatchObject({
      status: "ok",
      reason: "moved to b",
      decision: { handler: "fixer", action: "rewrite", updates },
      rewritten: { payload: { tool_name: "fs.write", arguments: { path: "b" } } },
      blocks: false,
    });
    expect(step.rewritten?.guarded?.arguments).toMatchObject({ path: "b" });
    expect(pre.arguments.path).toBe("a");
    expect(guarded.arguments).toMatchObject({ path: "a" });
  });

  it("an invalid rewrite or a decision that breaks the hook's rules is a handler error, nothing rewritten", () => {
    const bad = applyDecision(view, handler("PreToolUse", "bad"), {
      action: "rewrite",
      updates: { arguments: "x" },
    });
    expect(bad).toMatchObject({ status: "error", reason: "InvalidRewrite", blocks: false });
    expect(bad.error?.message).toMatch(/^invalid rewrite: /);
    expect(bad).not.toHaveProperty("rewritten");
    expect(bad).not.toHaveProperty("decision");
    expect(applyDecision(view, handler("PreToolUse", "worse"), { action: "allow" })).toMatchObject({
      reason: "InvalidDecision",
      error: { message: "allow is not allowed for PreToolUse" },
    });
  });

  it("block stops the chain and audits its reason, cut to 512 characters", () => {
    const reason = "r".repeat(600);
    const step = applyDecision(view, handler("PreToolUse", "guard"), { action: "block", reason });
    expect(step).toMatchObject({
      status: "block",
      decision: { handler: "guard", action: "block", reason },
      blocks: true,
    });
    expect(step.reason.startsWith("r".repeat(512))).toBe(true);
    expect(step.reason.length).toBeLessThan(600);
  });
});
