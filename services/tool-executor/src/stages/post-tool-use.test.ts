import { GeodeError } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { checkCall } from "./policy.js";
import { postToolUse } from "./post-tool-use.js";
import { type HookScript, outcome, stageTool, useStageHarness } from "./stage-fixture.js";

let script: HookScript = (hook, payload) => outcome(hook, payload);
const { h } = useStageHarness({
  hooks: (hook, payload) => script(hook, payload),
  tools: [stageTool("t.read")],
});

async function ran(result: Record<string, unknown>, hasError = false) {
  const call = h().open({ tool_name: "t.read", arguments: { q: 1 } });
  await checkCall(call, "t.read", { q: 1 });
  call.entered = true;
  call.result = { result, has_error: hasError };
  return call;
}

describe("PostToolUse stage", () => {
  it("sends the result and whether the terminal was entered; the status follows has_error", async () => {
    const call = await ran({ rows: 3 });
    expect(await postToolUse(call)).toBeUndefined();
    expect(call.status).toBe("completed");
    expect(h().invoked.at(-1)).toEqual({
      hook: "PostToolUse",
      payload: {
        tool_name: "t.read",
        arguments: { q: 1 },
        result: { rows: 3 },
        has_error: false,
        executed: true,
      },
    });
    const failed = await ran({ error: "x" }, true);
    await postToolUse(failed);
    expect(failed.status).toBe("failed");
  });

  it("collects add_context reasons in order; block marks the call blocked with its reason", async () => {
    script = (hook, payload) =>
      outcome(hook, payload, [
        { handler: "a", action: "add_context", reason: "first" },
        { handler: "b", action: "add_context", reason: "second" },
        { handler: "c", action: "block", reason: "leaks data" },
      ]);
    const call = await ran({});
    await postToolUse(call);
    expect(call.additionalContext).toEqual(["first", "second"]);
    expect(call).toMatchObject({ status: "blocked", reason: "c: leaks data" });
  });

  it("the effect already happened: a dispatcher that cannot be reached is noted, not a failure", async () => {
    script = () => {
      throw new GeodeError("unavailable", "no responders");
    };
    const call = await ran({ ok: true });
    expect(await postToolUse(call)).toBeUndefined();
    expect(call).toMatchObject({ status: "completed", reason: "PostToolUse not run: no responders" });
  });
});
