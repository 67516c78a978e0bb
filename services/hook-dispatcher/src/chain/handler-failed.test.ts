import { describe, expect, it } from "vitest";
import { chainRun, handler } from "./chain-fixture.js";
import { handlerFailed } from "./handler-failed.js";

describe("handlerFailed", () => {
  it("an open handler's error is recorded and audited with its type only; the chain goes on", () => {
    const { run, audits } = chainRun("PreToolUse", { tool_name: "x", arguments: {} });
    expect(handlerFailed(run, handler("PreToolUse", "slow"), "Timeout", "timed out after 10 ms", 0)).toBe(
      false,
    );
    expect(run.errors).toEqual(["slow: timed out after 10 ms"]);
    expect(audits.added).toMatchObject([
      { surface: "hook", name: "PreToolUse", extension: "slow", status: "error", reason: "Timeout" },
    ]);
    expect(run.outcome()).toMatchObject({ decisions: [], blocked: false });
  });

  it("a closed handler's error stops the chain as block, or deny for PermissionRequest", () => {
    const closed = { failure_mode: "closed" as const };
    const pre = chainRun("PreToolUse", { tool_name: "x", arguments: {} }).run;
    expect(
      handlerFailed(pre, handler("PreToolUse", "guard", closed), "NoResponders", "no responders", 0),
    ).toBe(true);
    expect(pre.outcome()).toMatchObject({
      decisions: [{ handler: "guard", action: "block", reason: "failure_mode closed: no responders" }],
      decision_sources: ["guard"],
      handler_errors: ["guard: no responders"],
      blocked: true,
    });
    const perm = chainRun("PermissionRequest", { tool_name: "x", safety_level: "read", detail: "" }).run;
    handlerFailed(perm, handler("PermissionRequest", "guard", closed), "LeaseExpired", "lease expired", 0);
    expect(perm.decisions).toEqual([
      { handler: "guard", action: "deny", reason: "failure_mode closed: lease expired" },
    ]);
  });
});
