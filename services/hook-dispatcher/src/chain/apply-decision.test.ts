import { describe, expect, it } from "vitest";
import { applyDecision } from "./apply-decision.js";
import { chainRun, handler } from "./chain-fixture.js";

const pre = { tool_name: "fs.write", arguments: { path: "a" } };

describe("applyDecision", () => {
  it("null is no decision: audited ok, nothing added, never a continue", () => {
    const { run, audits } = chainRun("PreToolUse", pre);
    expect(applyDecision(run, handler("PreToolUse", "h"), null, 0)).toBe(false);
    expect(run.outcome()).toMatchObject({ decisions: [], decision_sources: [], blocked: false });
    expect(audits.added).toMatchObject([{ extension: "h", status: "ok", reason: "" }]);
  });

  it("a rewrite is merged and validated again; the next handler sees it", () => {
    const { run } = chainRun("PreToolUse", pre);
    const updates = { arguments: { path: "b" } };
    expect(applyDecision(run, handler("PreToolUse", "fixer"), { action: "rewrite", updates }, 0)).toBe(false);
    expect(run.payload).toEqual({ tool_name: "fs.write", arguments: { path: "b" } });
    expect(run.decisions).toEqual([{ handler: "fixer", action: "rewrite", updates }]);
  });

  it("an invalid rewrite or a decision that breaks the hook's rules is a handler error, payload unchanged", () => {
    const { run, audits } = chainRun("PreToolUse", pre);
    applyDecision(run, handler("PreToolUse", "bad"), { action: "rewrite", updates: { arguments: "x" } }, 0);
    applyDecision(run, handler("PreToolUse", "worse"), { action: "allow" }, 0);
    expect(run.payload).toEqual(pre);
    expect(run.decisions).toEqual([]);
    expect(run.errors).toEqual([
      expect.stringMatching(/^bad: invalid rewrite: /),
      "worse: allow is not allowed for PreToolUse",
    ]);
    expect(audits.added.map((a) => a.reason)).toEqual(["InvalidRewrite", "InvalidDecision"]);
  });

  it("block stops the chain and audits its reason, cut to 512 characters", () => {
    const { run, audits } = chainRun("PreToolUse", pre);
    const reason = "r".repeat(600);
    expect(applyDecision(run, handler("PreToolUse", "guard"), { action: "block", reason }, 0)).toBe(true);
    expect(run.outcome()).toMatchObject({
      blocked: true,
      decisions: [{ handler: "guard", action: "block", reason }],
    });
    expect(audits.added[0]).toMatchObject({ status: "block" });
    expect(audits.added[0]?.reason.startsWith("r".repeat(512))).toBe(true);
    expect(audits.added[0]?.reason.length).toBeLessThan(600);
  });
});
