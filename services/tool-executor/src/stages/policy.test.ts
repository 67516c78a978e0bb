import { describe, expect, it } from "vitest";
import { checkCall, originalPolicy } from "./policy.js";
import { stageTool, useStageHarness } from "./stage-fixture.js";

const { h } = useStageHarness({
  deny: ["danger.*", "shell.*"],
  tools: [
    stageTool("notes.read", {
      input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    }),
    stageTool("notes.write", { effect: "mutation" }),
    stageTool("danger.rm", { effect: "admin" }),
  ],
});

describe("policy stage", () => {
  it("the original policy denies a listed tool before anything else runs", () => {
    expect(originalPolicy(h().open({ tool_name: "danger.rm" }))).toMatchObject({
      status: "denied",
      executed: false,
      reason: "policy: danger.rm is on the deny list",
    });
    expect(originalPolicy(h().open({ tool_name: "notes.read" }))).toBeUndefined();
  });

  it("a denied call's only record says denied, not executed, why, and what it would have run", () => {
    const call = h().open({ tool_name: "shell.exec", arguments: { command: "rm -rf /  --token=abc123" } });
    originalPolicy(call);
    expect(
      h()
        .seen.filter((e) => "kind" in e && e.kind === "tool.completed")
        .at(-1)?.payload,
    ).toEqual({
      tool_name: "shell.exec",
      status: "denied",
      has_error: false,
      executed: false,
      reason: "policy: shell.exec is on the deny list",
      target: "rm -rf / --token=[REDACTED]",
    });
  });

  it("checkCall resolves the tool and takes the arguments it validated", async () => {
    const call = h().open({ tool_name: "notes.read" });
    expect(await checkCall(call, "notes.read", { path: "a.txt" })).toBeUndefined();
    expect(call.definition.name).toBe("notes.read");
    expect(call.args).toEqual({ path: "a.txt" });
  });

  it("checkCall applies the policy again: a rewrite to a denied tool is denied", async () => {
    const call = h().open({ tool_name: "notes.read" });
    expect(await checkCall(call, "danger.rm", {})).toMatchObject({ status: "denied" });
    expect(() => call.tool).toThrow(/not resolved/);
  });

  it("refuses unknown tools, arguments the schema refuses and effectful calls without an operation key", async () => {
    const call = h().open({ tool_name: "notes.read" });
    await expect(checkCall(call, "no.such", {})).rejects.toMatchObject({ code: "unknown_tool" });
    await expect(checkCall(call, "notes.read", { path: 1 })).rejects.toMatchObject({
      code: "schema_invalid",
      message: "arguments.path: must be string",
    });
    await expect(checkCall(call, "notes.read", {}, "PreToolUse rewrite")).rejects.toMatchObject({
      code: "schema_invalid",
      message: expect.stringMatching(/^PreToolUse rewrite: /),
    });
    await expect(checkCall(call, "notes.write", {})).rejects.toMatchObject({ code: "invalid_request" });
    const keyed = h().open({ tool_name: "notes.write", operation_key: "op-1" });
    expect(await checkCall(keyed, "notes.write", {})).toBeUndefined();
  });
});
