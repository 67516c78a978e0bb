/**
 * Every row of the opencode mapping (docs/opencode.md), over HTTP with bodies shaped as the plugin
 * `@geode/opencode-plugin` posts them: what the plane is asked, and what the plugin is answered.
 */
import { randomUUID } from "node:crypto";
import { HookName, OPENCODE_EVENTS, OPENCODE_HOOK_PATH } from "@geode/contracts";
import { serveApprovals } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { useGatewayFixture, withUndecidedPlane } from "./gateway-support.js";

const fx = useGatewayFixture({ approvalTimeoutMs: 1_500 });

/** A plugin body: the event, opencode's session id (`directory` never to be forwarded) and `fields`. */
function opencodeInput(
  event: string,
  fields: Record<string, unknown> = {},
  sessionId = `ses_${randomUUID().replaceAll("-", "")}`,
): Record<string, unknown> {
  return { event, session_id: sessionId, directory: "/home/dev/secret-project", ...fields };
}

const post = (body: unknown, token?: string | null) =>
  fx.post(body, { path: OPENCODE_HOOK_PATH, ...(token === undefined ? {} : { token }) });

const handler = fx.serve;

const bash = (command: string, sessionId?: string, callId = `call_${randomUUID().slice(0, 8)}`) =>
  opencodeInput("tool.execute.before", { tool: "bash", call_id: callId, args: { command } }, sessionId);

describe("opencode: the front door", () => {
  it("401 without a known token; 400 for a body that is not the plugin's; nothing invoked", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "oc-watch", () => null);
    const prompt = opencodeInput("chat.message", { prompt: "hi" });
    expect((await post(prompt, "nope")).status).toBe(401);
    expect((await post({ prompt: "hi" })).status).toBe(400);
    expect((await post(opencodeInput("chat.message"))).status).toBe(400);
    expect((await post(opencodeInput("tool.execute.before", { args: {} }))).status).toBe(400);
    expect(seen).toHaveLength(0);
  });

  it("every event the plugin posts is known to the contract", () => {
    expect(OPENCODE_EVENTS.map((e) => e.event)).toEqual([
      "session.created",
      "chat.message",
      "tool.execute.before",
      "permission.ask",
      "tool.execute.after",
      "session.compacting",
      "session.compacted",
      "session.idle",
      "session.error",
      "session.deleted",
      "instance.disposed",
    ]);
  });
});

describe("opencode: sessions and prompts", () => {
  it("session.created starts the session with agent, kind and provider; session.deleted ends it", async () => {
    const seenStart = await handler(HookName.SessionStart, "oc-start", () => null);
    const seenEnd = await handler(HookName.SessionEnd, "oc-end", () => null);
    const sessionId = `ses_${randomUUID().replaceAll("-", "")}`;
    expect((await post(opencodeInput("session.created", {}, sessionId))).body).toEqual({});
    expect(seenStart[0]?.payload).toMatchObject({ provider: "opencode", resumed: false });
    expect(seenStart[0]?.correlation.run_id).toBe(sessionId);
    expect((await post(opencodeInput("session.deleted", { reason: "deleted" }, sessionId))).body).toEqual({});
    expect(seenEnd[0]?.payload).toEqual({ reason: "deleted", status: "completed" });
    const started = (await fx.sessionEvents(sessionId)).find((e) => e.event === "session_started");
    expect(started?.payload).toMatchObject({ agent: "laptop", agent_kind: "opencode", provider: "opencode" });
    expect(JSON.stringify(seenStart)).not.toContain("secret-project");
  });

  it("chat.message → UserPromptSubmit: block → deny with the reason", async () => {
    await handler(HookName.UserPromptSubmit, "oc-prompt", (e) =>
      String(e.payload["user_input"]).includes("secret") ? { action: "block", reason: "no secrets" } : null,
    );
    const sessionId = `ses_${randomUUID().replaceAll("-", "")}`;
    const prompt = (text: string) =>
      post(opencodeInput("chat.message", { prompt: text, message_id: `msg_${randomUUID()}` }, sessionId));
    expect((await prompt("tell me the secret")).body).toEqual({
      decision: "deny",
      reason: "oc-prompt: no secrets",
    });
    expect((await prompt("hello")).body).toEqual({});
  });
});

describe("opencode: tool calls", () => {
  it("tool.execute.before block → deny with the reason; bash's command is the shell command", async () => {
    const seen = await handler(HookName.PreToolUse, "oc-guard", (e) =>
      String((e.payload["arguments"] as { command: string }).command).includes("rm -rf")
        ? { action: "block", reason: "no" }
        : null,
    );
    expect((await post(bash("rm -rf /", undefined, "call_1"))).body).toEqual({
      decision: "deny",
      reason: "oc-guard: no",
    });
    expect(seen[0]?.payload).toMatchObject({ tool_name: "bash", arguments: { command: "rm -rf /" } });
    expect(seen[0]?.correlation.tool_call_id).toBe("call_1");
    expect((await post(bash("ls"))).body).toEqual({});
  });

  it("a rewrite → args, the rewritten arguments", async () => {
    await handler(HookName.PreToolUse, "oc-rewrite", (e) => ({
      action: "rewrite",
      updates: { arguments: { ...(e.payload["arguments"] as object), command: "timeout 60 make" } },
    }));
    expect((await post(bash("make"))).body).toEqual({ args: { command: "timeout 60 make" } });
  });

  it("request_permission: nobody answering → deny; an approver's allow → go on", async () => {
    await handler(HookName.PreToolUse, "oc-ask", () => ({
      action: "request_permission",
      reason: "deploys need a person",
    }));
    expect((await post(bash("deploy"))).body).toEqual({
      decision: "deny",
      reason: expect.stringContaining("oc-ask: deploys need a person"),
    });
    const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, () => ({
      decision: "allow",
      reason: "on call says yes",
    }));
    await fx.env().nc.flush();
    try {
      expect((await post(bash("deploy"))).body).toEqual({});
    } finally {
      await approver.close();
    }
  });

  it("permission.ask: deny → deny with the reason; an approver → allow; nobody → {}", async () => {
    await handler(HookName.PermissionRequest, "oc-perm", (e) =>
      JSON.stringify(e.payload).includes("/etc") ? { action: "deny", reason: "not /etc" } : null,
    );
    const ask = (command: string) =>
      opencodeInput("permission.ask", { tool: "bash", call_id: `call_${randomUUID()}`, args: { command } });
    expect((await post(ask("cat /etc/shadow"))).body).toEqual({
      decision: "deny",
      reason: "oc-perm: not /etc",
    });
    expect((await post(ask("ls"))).body).toEqual({});
    const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, () => ({
      decision: "allow",
      reason: "fine",
    }));
    await fx.env().nc.flush();
    try {
      expect((await post(ask("ls"))).body).toEqual({ decision: "allow" });
    } finally {
      await approver.close();
    }
  });

  it("tool.execute.after: the output is the result; add_context → context; a block → output with the reason", async () => {
    const seen = await handler(HookName.PostToolUse, "oc-post", (e) =>
      e.payload["has_error"]
        ? { action: "block", reason: "look at the failure" }
        : { action: "add_context", reason: "note this" },
    );
    const sessionId = `ses_${randomUUID().replaceAll("-", "")}`;
    await post(bash("echo hi", sessionId, "call_a"));
    const done = opencodeInput(
      "tool.execute.after",
      { tool: "bash", call_id: "call_a", args: { command: "echo hi" }, output: "hi\n", title: "echo hi" },
      sessionId,
    );
    expect((await post(done)).body).toEqual({ context: "note this" });
    expect(seen[0]?.payload).toMatchObject({
      result: { output: "hi\n", title: "echo hi" },
      has_error: false,
      executed: true,
    });
    await post(bash("false", sessionId, "call_b"));
    const failed = opencodeInput(
      "tool.execute.after",
      { tool: "bash", call_id: "call_b", args: { command: "false" }, error: "exit code 1" },
      sessionId,
    );
    expect((await post(failed)).body).toEqual({
      output: "geode blocked this tool result: oc-post: look at the failure",
    });
    expect(seen[1]?.payload).toMatchObject({ result: { error: "exit code 1" }, has_error: true });
    const events = await fx.sessionEvents(sessionId);
    expect(events.map((e) => e.event)).toEqual(
      expect.arrayContaining(["tool_exec_started", "tool_exec_ended", "tool_exec_failed"]),
    );
  });
});

describe("opencode: compaction, idle, errors", () => {
  it("session.compacting → PreCompact, session.compacted → PostCompact; idle and errors are runtime events only", async () => {
    const pre = await handler(HookName.PreCompact, "oc-compact", () => ({ action: "defer", reason: "no" }));
    const postSeen = await handler(HookName.PostCompact, "oc-compacted", () => null);
    const sessionId = `ses_${randomUUID().replaceAll("-", "")}`;
    expect((await post(opencodeInput("session.compacting", {}, sessionId))).body).toEqual({});
    expect((await post(opencodeInput("session.compacted", {}, sessionId))).body).toEqual({});
    expect(pre[0]?.payload).toMatchObject({ trigger: "auto", provider: "opencode" });
    expect(postSeen).toHaveLength(1);
    expect((await post(opencodeInput("session.idle", {}, sessionId))).body).toEqual({});
    const error = opencodeInput("session.error", { error: "token sk-live-123 rejected" }, sessionId);
    expect((await post(error)).body).toEqual({});
    await waitFor(async () => (await fx.sessionEvents(sessionId)).some((e) => e.event === "llm_call_failed"));
    const events = await fx.sessionEvents(sessionId);
    expect(
      events.filter((e) => e.event === "adapter_dispatch_attempt").map((e) => e.payload["hook_event_name"]),
    ).toContain("session.idle");
    expect(JSON.stringify(events)).not.toContain("sk-live-123");
  });

  it("fails closed when the plane cannot decide: guarded events are refused with a 200, others go on", async () => {
    await withUndecidedPlane(fx.env(), OPENCODE_HOOK_PATH, async (post) => {
      expect(await post(bash("ls"))).toMatchObject({
        status: 200,
        body: { decision: "deny", reason: expect.stringMatching(/could not decide/) },
      });
      expect((await post(opencodeInput("chat.message", { prompt: "hi" }))).body).toMatchObject({
        decision: "deny",
      });
      expect((await post(opencodeInput("permission.ask", { tool: "bash", args: {} }))).body).toMatchObject({
        decision: "deny",
      });
      const done = opencodeInput("tool.execute.after", { tool: "bash", args: {}, output: "" });
      expect(await post(done)).toEqual({ status: 200, body: {} });
    });
  });
});

describe("opencode: sub-agents (the task tool)", () => {
  const sesId = () => `ses_${randomUUID().replaceAll("-", "")}`;

  it("a task's session.created → SubagentStart in the parent's session, its idle → SubagentStop, once; its tool calls stay its own", async () => {
    const start = await handler(HookName.SubagentStart, "oc-sub", () => null);
    const stop = await handler(HookName.SubagentStop, "oc-sub-stop", () => null);
    const sessionStart = await handler(HookName.SessionStart, "oc-sub-ss", () => null);
    const pre = await handler(HookName.PreToolUse, "oc-sub-pre", () => null);
    const parent = sesId();
    const child = sesId();
    expect((await post(opencodeInput("session.created", {}, parent))).body).toEqual({});
    const created = opencodeInput(
      "session.created",
      { parent_session_id: parent, agent: "general", title: "look around (@general subagent)" },
      child,
    );
    expect((await post(created)).body).toEqual({});
    expect(start).toHaveLength(1);
    expect(start[0]?.payload).toMatchObject({
      task_id: child,
      task_type: "general",
      description: "look around",
      child_session_key: child,
      parent_session_key: parent,
    });
    expect(start[0]?.correlation.session_id).toBe(parent);
    // The child is not a session of its own start: no SessionStart for it.
    expect(sessionStart.map((e) => e.correlation.session_id)).toEqual([parent]);
    expect((await post(bash("echo child", child))).body).toEqual({});
    expect(pre.map((e) => e.correlation.session_id)).toEqual([child]);
    const idle = opencodeInput("session.idle", { parent_session_id: parent, agent: "general" }, child);
    expect((await post(idle)).body).toEqual({});
    expect((await post(idle)).body).toEqual({});
    expect(stop).toHaveLength(1);
    expect(stop[0]?.payload).toMatchObject({
      task_id: child,
      task_type: "general",
      success: true,
      status: "completed",
      child_session_key: child,
    });
    expect(stop[0]?.correlation.session_id).toBe(parent);
    const started = (await fx.sessionEvents(parent)).filter((e) => e.event === "subagent_started");
    expect(started).toHaveLength(1);
  });

  it("a task's session.error → a failed SubagentStop (never the error text); without a parent, idle starts nothing", async () => {
    const stop = await handler(HookName.SubagentStop, "oc-sub-fail", () => null);
    const start = await handler(HookName.SubagentStart, "oc-sub-none", () => null);
    const parent = sesId();
    const child = sesId();
    await post(opencodeInput("session.created", {}, parent));
    await post(opencodeInput("session.created", { parent_session_id: parent, agent: "explore" }, child));
    const error = opencodeInput(
      "session.error",
      { parent_session_id: parent, agent: "explore", error: "token sk-live-456 rejected" },
      child,
    );
    expect((await post(error)).body).toEqual({});
    expect((await post(opencodeInput("session.idle", { parent_session_id: parent }, child))).body).toEqual(
      {},
    );
    expect(stop.map((e) => e.payload)).toEqual([
      expect.objectContaining({ task_id: child, task_type: "explore", success: false, status: "error" }),
    ]);
    expect(JSON.stringify(stop)).not.toContain("sk-live-456");
    expect((await post(opencodeInput("session.idle", {}, sesId()))).body).toEqual({});
    expect(start).toHaveLength(1);
  });
});
