import { encodeJson, ensureBucket, serveRequests } from "@geode/bus";
import { ErrorCode, ErrorKind, GeodeError } from "@geode/contracts";
import { MiddlewareRegistry } from "@geode/middleware";
import { beforeAll, describe, expect, it } from "vitest";
import { admission } from "./admission.js";
import { checkCall } from "./policy.js";
import { stageTool, useStageHarness } from "./stage-fixture.js";
import { terminal } from "./terminal.js";

const middleware = new MiddlewareRegistry();
const never = () => new Promise<never>(() => undefined);
const { h, env } = useStageHarness({
  middleware,
  tools: [
    stageTool("t.echo"),
    stageTool("t.stuck", { timeout_ms: 50 }, never),
    stageTool("w.stuck", { effect: "mutation", timeout_ms: 50 }, never),
    stageTool("w.throws", { effect: "mutation" }, async () => {
      throw new Error("disk on fire");
    }),
  ],
});
beforeAll(async () => {
  // A remote tool nobody serves.
  const tools = await ensureBucket(env().nc, env().names, "tools");
  const ghost = {
    name: "ghost.write",
    description: "",
    input_schema: {},
    effect: "mutation",
    requires_approval: false,
  };
  await tools.put("ghost.write", encodeJson(ghost));
  // Remote terminals that lost a call they passed on, and that never began one.
  for (const [name, err] of [
    ["lost.write", new GeodeError(ErrorCode.Indeterminate, "upstream went away during the call")],
    [
      "down.write",
      new GeodeError(ErrorCode.Unavailable, "upstream is not connected", {
        details: { kind: ErrorKind.NotStarted },
      }),
    ],
  ] as const) {
    await tools.put(name, encodeJson({ ...ghost, name }));
    serveRequests(env().nc, env().names.toolTerminal(name), {}, async () => {
      throw err;
    });
  }
});

async function admitted(name: string, key: string) {
  const call = h().open({ tool_name: name, operation_key: key, correlation: { tool_call_id: key } });
  await checkCall(call, name, { k: key });
  await admission(call);
  return call;
}

const eventsOf = (key: string) =>
  h().seen.flatMap((e) => ("event" in e && e.correlation.tool_call_id === key ? [e.event] : []));

describe("terminal stage", () => {
  it("calls the terminal once between tool_exec_started and tool_exec_ended", async () => {
    const call = await admitted("t.echo", "echo-1");
    expect(await terminal(call)).toBeUndefined();
    expect(call.entered).toBe(true);
    expect(call.result).toEqual({ result: { echoed: { k: "echo-1" } }, has_error: false });
    expect(eventsOf("echo-1")).toEqual(["tool_exec_started", "tool_exec_ended"]);
  });

  it("a wrapper that answers without next: not entered, no tool_exec_started", async () => {
    const off = middleware.registerToolExecution({ name: "cache" }, async () => ({
      result: { cached: true },
      has_error: false,
    }));
    try {
      const call = await admitted("t.echo", "echo-2");
      expect(await terminal(call)).toBeUndefined();
      expect(call).toMatchObject({ entered: false, result: { result: { cached: true } } });
      expect(eventsOf("echo-2")).not.toContain("tool_exec_started");
    } finally {
      off();
    }
  });

  it("a read tool out of time is an error result and the call goes on to PostToolUse", async () => {
    const call = await admitted("t.stuck", "stuck-1");
    expect(await terminal(call)).toBeUndefined();
    expect(call.result).toEqual({ result: { error: "t.stuck timed out after 50 ms" }, has_error: true });
    expect(eventsOf("stuck-1")).toEqual(["tool_exec_started", "tool_exec_ended", "tool_exec_failed"]);
  });

  it("an effectful tool out of time is indeterminate: the receipt stays admitted and its lease ends", async () => {
    const call = await admitted("w.stuck", "stuck-2");
    const reply = await terminal(call);
    expect(reply).toMatchObject({
      status: "indeterminate",
      executed: true,
      has_error: true,
      receipt: { state: "admitted" },
    });
    expect(call.lease).toBeNull();
    const receipt = (await h().deps.receipts.get("stuck-2"))?.receipt;
    expect(receipt?.state).toBe("admitted");
    expect(receipt?.lease_until).toBeLessThanOrEqual(Date.now());
  });

  it("a thrown terminal fails the call and keeps the admission; no responders gives it back", async () => {
    const thrown = await admitted("w.throws", "throw-1");
    expect(await terminal(thrown)).toMatchObject({
      status: "failed",
      executed: true,
      reason: "disk on fire",
      receipt: { state: "admitted" },
    });
    expect((await h().deps.receipts.get("throw-1"))?.receipt.state).toBe("admitted");

    const ghost = await admitted("ghost.write", "ghost-1");
    expect(await terminal(ghost)).toBeUndefined();
    expect(ghost.result).toEqual({
      result: { error: "no responders for tool ghost.write" },
      has_error: true,
    });
    expect(ghost.lease).toBeNull();
    expect(await h().deps.receipts.get("ghost-1")).toBeNull();
  });

  it("a terminal's indeterminate reply keeps the admission; a not_started one gives it back", async () => {
    const lost = await admitted("lost.write", "lost-1");
    expect(await terminal(lost)).toMatchObject({
      status: "indeterminate",
      executed: true,
      reason: expect.stringContaining("upstream went away during the call"),
      receipt: { state: "admitted" },
    });
    expect((await h().deps.receipts.get("lost-1"))?.receipt.state).toBe("admitted");

    const down = await admitted("down.write", "down-1");
    expect(await terminal(down)).toBeUndefined();
    expect(down.result).toEqual({ result: { error: "upstream is not connected" }, has_error: true });
    expect(down.lease).toBeNull();
    expect(await h().deps.receipts.get("down-1")).toBeNull();
  });
});
