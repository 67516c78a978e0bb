import { GeodeError } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { checkCall } from "./policy.js";
import { preToolUse, restoreRedacted } from "./pre-tool-use.js";
import { type HookScript, outcome, stageTool, useStageHarness } from "./stage-fixture.js";
import type { ToolCall } from "./tool-call.js";

let script: HookScript = (hook, payload) => outcome(hook, payload);
const { h } = useStageHarness({
  deny: ["danger.*"],
  hooks: (hook, payload) => script(hook, payload),
  tools: [
    stageTool("files.read", { input_schema: { type: "object", properties: { path: { type: "string" } } } }),
    stageTool("danger.rm"),
  ],
});

async function shaped(args: Record<string, unknown>): Promise<ToolCall> {
  const call = h().open({ tool_name: "files.read", arguments: args });
  await checkCall(call, "files.read", args);
  return call;
}

describe("PreToolUse stage", () => {
  it("sends the tool and its arguments; no decision goes on unchanged", async () => {
    const call = await shaped({ path: "a" });
    expect(await preToolUse(call)).toBeUndefined();
    expect(h().invoked.at(-1)).toEqual({
      hook: "PreToolUse",
      payload: { tool_name: "files.read", arguments: { path: "a" } },
    });
    expect(call.args).toEqual({ path: "a" });
  });

  it("block stops the call with the handler's reason; a closed guard's failure blocks too", async () => {
    script = (hook, payload) =>
      outcome(hook, payload, [{ handler: "guard", action: "block", reason: "not today" }], true);
    expect(await preToolUse(await shaped({}))).toMatchObject({
      status: "blocked",
      reason: "guard: not today",
    });
    // Its only record naming the tool: tool.completed, blocked, never run, with the reason.
    expect(
      h()
        .seen.filter((e) => "kind" in e && e.kind === "tool.completed")
        .at(-1)?.payload,
    ).toEqual({
      tool_name: "files.read",
      status: "blocked",
      has_error: false,
      executed: false,
      reason: "guard: not today",
    });
    script = (hook, payload) => outcome(hook, payload, [], true);
    expect(await preToolUse(await shaped({}))).toMatchObject({ status: "blocked", reason: "blocked" });
  });

  it("a rewrite is checked again: policy first, then the schema; the caller's secrets are kept", async () => {
    const rewrite =
      (updates: Record<string, unknown>): HookScript =>
      (hook, payload) =>
        outcome(hook, { ...payload, ...updates }, [{ handler: "fixer", action: "rewrite", updates }]);
    script = rewrite({ arguments: { path: "b", _redacted_fields: ["api_key"] } });
    const call = await shaped({ path: "a", api_key: "k-1" });
    expect(await preToolUse(call)).toBeUndefined();
    expect(call.args).toEqual({ path: "b", api_key: "k-1" });
    script = rewrite({ tool_name: "danger.rm" });
    expect(await preToolUse(await shaped({}))).toMatchObject({ status: "denied" });
    script = rewrite({ arguments: { path: 7 } });
    await expect(preToolUse(await shaped({}))).rejects.toMatchObject({ code: "schema_invalid" });
  });

  it("an unreachable dispatcher fails the call closed", async () => {
    script = () => {
      throw new GeodeError("unavailable", "no responders");
    };
    await expect(preToolUse(await shaped({}))).rejects.toMatchObject({
      code: "unavailable",
      message: "PreToolUse could not run (no responders); the tool call was not executed",
    });
  });

  it("keeps request_permission for the approval stage", async () => {
    script = (hook, payload) => outcome(hook, payload, [{ handler: "asker", action: "request_permission" }]);
    const call = await shaped({});
    expect(await preToolUse(call)).toBeUndefined();
    expect(call.preToolUse?.decisions).toEqual([{ handler: "asker", action: "request_permission" }]);
  });
});

describe("restoreRedacted", () => {
  it("puts back keys the handler never saw and drops the marker the caller did not send", () => {
    expect(restoreRedacted({ path: "x", _redacted_fields: ["token"] }, { path: "y", token: "t" })).toEqual({
      path: "x",
      token: "t",
    });
    expect(restoreRedacted({ token: "new", _redacted_fields: ["token"] }, { token: "old" })).toEqual({
      token: "new",
    });
    expect(restoreRedacted({ path: "x" }, { token: "t" })).toEqual({ path: "x" });
  });
});
