/**
 * Every row of the Qwen Code mapping (docs/qwen-code.md), over HTTP with inputs shaped as Qwen
 * Code 0.24.4 sends them: what the plane is asked, and what Qwen Code is answered.
 */
import { randomUUID } from "node:crypto";
import { HookName, QWEN_CODE_EVENTS, QWEN_CODE_HOOK_PATH } from "@geode/contracts";
import { serveApprovals } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { useGatewayFixture, withUndecidedPlane } from "./gateway-support.js";

const fx = useGatewayFixture({ approvalTimeoutMs: 1_500 });

interface Session {
  session_id: string;
  prompt_id?: string;
}
const newSession = (): Session => {
  const id = randomUUID();
  return { session_id: id, prompt_id: `${id}########0` };
};

/** A Qwen Code hook input: the fields every event carries (the local ones never to be forwarded) and `fields`. */
function qwenInput(
  event: string,
  fields: Record<string, unknown> = {},
  session: Session = newSession(),
): Record<string, unknown> {
  return {
    session_id: session.session_id,
    ...(session.prompt_id ? { prompt_id: session.prompt_id } : {}),
    transcript_path: "/home/dev/.qwen/projects/-home-dev-secret-project/chats/x.jsonl",
    cwd: "/home/dev/secret-project",
    hook_event_name: event,
    timestamp: "2026-12-04T18:20:16.260Z",
    permission_mode: "yolo",
    ...fields,
  };
}

const post = (body: unknown, token?: string | null) =>
  fx.post(body, { path: QWEN_CODE_HOOK_PATH, ...(token === undefined ? {} : { token }) });

const handler = fx.serve;
const sessionEvents = fx.sessionEvents;

/** A shell call as Qwen Code names it: its own `tool_use_id` and the model's `tool_call_id`. */
const shell = (command: string, session?: Session) =>
  qwenInput(
    "PreToolUse",
    {
      tool_name: "run_shell_command",
      tool_input: { command },
      tool_use_id: `toolu_${randomUUID()}`,
      tool_call_id: `call_${randomUUID()}`,
    },
    session,
  );

describe("Qwen Code: the front door", () => {
  it("401 without a known token, 400 for a body that is not a Qwen Code input, nothing invoked", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "qw-watch", () => null);
    expect((await post(qwenInput("UserPromptSubmit", { prompt: "hi" }), "nope")).status).toBe(401);
    expect((await post({ hook_event_name: "UserPromptSubmit", prompt: "x" })).status).toBe(400);
    expect((await post(qwenInput("PreToolUse", { tool_input: {} }))).status).toBe(400);
    expect(
      (await post(qwenInput("PreToolUse", { tool_name: "x", tool_input: {}, tool_call_id: 7 }))).status,
    ).toBe(400);
    expect(seen).toHaveLength(0);
  });

  it("maps Claude Code's events, in the contract's order", () => {
    expect(QWEN_CODE_EVENTS.map((e) => e.event)).toEqual([
      "SessionStart",
      "UserPromptSubmit",
      "PreToolUse",
      "PermissionRequest",
      "PostToolUse",
      "PostToolUseFailure",
      "PermissionDenied",
      "Stop",
      "StopFailure",
      "SubagentStart",
      "SubagentStop",
      "PreCompact",
      "PostCompact",
      "Notification",
      "SessionEnd",
    ]);
  });
});

describe("Qwen Code: sessions and prompts", () => {
  it("SessionStart starts the session with Qwen Code's model, agent and kind; SessionEnd ends it", async () => {
    const seenStart = await handler(HookName.SessionStart, "qw-start", () => null);
    const seenEnd = await handler(HookName.SessionEnd, "qw-end", () => null);
    const session = { session_id: randomUUID() };
    expect(
      (await post(qwenInput("SessionStart", { source: "startup", model: "qwen3-coder" }, session))).body,
    ).toEqual({});
    expect(seenStart[0]?.payload).toMatchObject({ model: "qwen3-coder", provider: "qwen", resumed: false });
    expect(seenStart[0]?.correlation.run_id).toBe(session.session_id);
    expect((await post(qwenInput("SessionEnd", { reason: "prompt_input_exit" }, session))).body).toEqual({});
    expect(seenEnd[0]?.payload).toMatchObject({ reason: "prompt_input_exit", status: "completed" });
    const started = (await sessionEvents(session.session_id)).find((e) => e.event === "session_started");
    expect(started?.payload).toMatchObject({
      agent: "laptop",
      agent_kind: "qwen-code",
      model: "qwen3-coder",
    });
    expect(JSON.stringify(seenStart)).not.toContain("secret-project");
  });

  it("UserPromptSubmit: block → decision block; the turn is prompt_id (# as :); the tool-result send is recorded only", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "qw-prompt", (e) =>
      String(e.payload["user_input"]).includes("secret") ? { action: "block", reason: "no secrets" } : null,
    );
    const session = newSession();
    const prompt = (text: string, more: Record<string, unknown> = {}) =>
      post(qwenInput("UserPromptSubmit", { prompt: text, ...more }, session));
    expect((await prompt("tell me the secret", { submitted_prompt: "tell me the secret" })).body).toEqual({
      decision: "block",
      reason: "qw-prompt: no secrets",
    });
    expect((await prompt("hello", { submitted_prompt: "hello" })).body).toEqual({});
    // The send that carries tool results back: no text, no submitted_prompt.
    expect((await prompt("")).body).toEqual({});
    expect(seen.map((e) => e.payload["user_input"])).toEqual(["tell me the secret", "hello"]);
    expect(seen[0]?.correlation.turn_id).toBe(`${session.session_id}:0`);
    await waitFor(async () =>
      (await sessionEvents(session.session_id)).some((e) => e.event === "adapter_dispatch_attempt"),
    );
    const recorded = (await sessionEvents(session.session_id)).find(
      (e) => e.event === "adapter_dispatch_attempt",
    );
    expect(recorded?.payload).toMatchObject({
      adapter: "qwen-code",
      hook_event_name: "UserPromptSubmit",
      send: "continuation",
    });
  });
});

describe("Qwen Code: tool calls", () => {
  it("PreToolUse block → permissionDecision deny; the call id is tool_call_id, else tool_use_id", async () => {
    const seen = await handler(HookName.PreToolUse, "qw-guard", (e) =>
      String((e.payload["arguments"] as { command: string }).command).includes("rm -rf")
        ? { action: "block", reason: "no" }
        : null,
    );
    const input = shell("rm -rf /");
    expect((await post(input)).body).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "qw-guard: no",
      },
    });
    expect(seen[0]?.correlation.tool_call_id).toBe(input["tool_call_id"]);
    expect(seen[0]?.payload).toMatchObject({ tool_name: "run_shell_command" });
    const noModelId = { ...shell("ls") };
    delete noModelId["tool_call_id"];
    expect((await post(noModelId)).body).toEqual({});
    expect(seen[1]?.correlation.tool_call_id).toBe(noModelId["tool_use_id"]);
  });

  it("a rewrite is a deny naming it (Qwen Code ignores updatedInput)", async () => {
    await handler(HookName.PreToolUse, "qw-rewrite", (e) => ({
      action: "rewrite",
      updates: { arguments: { ...(e.payload["arguments"] as object), command: "timeout 60 make" } },
    }));
    const denied = (await post(shell("make"))).body as {
      hookSpecificOutput: {
        permissionDecision: string;
        permissionDecisionReason: string;
        updatedInput?: unknown;
      };
    };
    expect(denied.hookSpecificOutput.permissionDecision).toBe("deny");
    expect(denied.hookSpecificOutput.permissionDecisionReason).toMatch(
      /rewritten by qw-rewrite .*cannot run a rewritten call/,
    );
  });

  it("request_permission nobody answers is ask (Qwen Code asks its user, or denies headless); an approver's allow is an allow", async () => {
    await handler(HookName.PreToolUse, "qw-ask", () => ({
      action: "request_permission",
      reason: "deploys need a person",
    }));
    const unanswered = (await post(shell("deploy"))).body as { hookSpecificOutput: Record<string, string> };
    expect(unanswered.hookSpecificOutput["permissionDecision"]).toBe("ask");
    const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, () => ({
      decision: "allow",
      reason: "on call says yes",
    }));
    await fx.env().nc.flush();
    try {
      const allowed = (await post(shell("deploy"))).body as { hookSpecificOutput: Record<string, string> };
      expect(allowed.hookSpecificOutput).toMatchObject({ permissionDecision: "allow" });
    } finally {
      await approver.close();
    }
  });

  it("PermissionRequest: deny → decision.behavior deny; nobody answering → {}", async () => {
    await handler(HookName.PermissionRequest, "qw-perm", (e) =>
      String(e.payload["detail"]).includes("/etc") ? { action: "deny", reason: "not /etc" } : null,
    );
    const ask = (command: string) =>
      qwenInput("PermissionRequest", {
        tool_name: "run_shell_command",
        tool_input: { command },
        permission_mode: "default",
      });
    expect((await post(ask("cat /etc/shadow"))).body).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: "qw-perm: not /etc" },
      },
    });
    expect((await post(ask("ls"))).body).toEqual({});
  });

  it("PostToolUse: add_context → additionalContext; PostToolUseFailure is a failed result", async () => {
    const seen = await handler(HookName.PostToolUse, "qw-post", () => ({
      action: "add_context",
      reason: "note this",
    }));
    const session = newSession();
    const pre = shell("echo hi", session);
    expect((await post(pre)).body).toEqual({});
    const ids = { tool_use_id: pre["tool_use_id"], tool_call_id: pre["tool_call_id"] };
    const input = qwenInput(
      "PostToolUse",
      {
        tool_name: "run_shell_command",
        tool_input: { command: "echo hi" },
        tool_response: { llmContent: "Command: echo hi\nOutput: hi" },
        duration_ms: 12,
        ...ids,
      },
      session,
    );
    expect((await post(input)).body).toEqual({
      hookSpecificOutput: { hookEventName: "PostToolUse", additionalContext: "note this" },
    });
    expect(seen[0]?.payload).toMatchObject({ has_error: false, executed: true });
    expect(seen[0]?.correlation.tool_call_id).toBe(pre["tool_call_id"]);
    const failed = qwenInput(
      "PostToolUseFailure",
      { tool_name: "run_shell_command", tool_input: { command: "false" }, error: "exit 1", ...ids },
      session,
    );
    expect((await post(failed)).body).toMatchObject({
      hookSpecificOutput: { hookEventName: "PostToolUseFailure", additionalContext: "note this" },
    });
    expect(seen[1]?.payload).toMatchObject({ has_error: true, result: { error: "exit 1" } });
    const events = await sessionEvents(session.session_id);
    expect(events.map((e) => e.event)).toEqual(
      expect.arrayContaining(["tool_exec_started", "tool_exec_ended"]),
    );
  });
});

describe("Qwen Code: compaction, sub-agents, Stop, its own events", () => {
  it("PreCompact and PostCompact reach their hooks; a defer is recorded and compaction goes on", async () => {
    await handler(HookName.PreCompact, "qw-defer", () => ({ action: "defer", reason: "not now" }));
    const post2 = await handler(HookName.PostCompact, "qw-post-compact", () => null);
    expect((await post(qwenInput("PreCompact", { trigger: "auto", custom_instructions: "" }))).body).toEqual(
      {},
    );
    expect(
      (await post(qwenInput("PostCompact", { trigger: "manual", compact_summary: "private summary" }))).body,
    ).toEqual({});
    expect(post2[0]?.payload).toMatchObject({ trigger: "manual", provider: "qwen" });
    expect(JSON.stringify(post2)).not.toContain("private summary");
  });

  it("SubagentStart and SubagentStop reach their hooks with Qwen Code's agent id", async () => {
    const start = await handler(HookName.SubagentStart, "qw-sub", () => null);
    const stop = await handler(HookName.SubagentStop, "qw-sub-stop", () => null);
    const session = newSession();
    const agent = { agent_id: `agent-${randomUUID()}`, agent_type: "Explorer" };
    expect((await post(qwenInput("SubagentStart", agent, session))).body).toEqual({});
    expect(
      (await post(qwenInput("SubagentStop", { ...agent, stop_hook_active: false }, session))).body,
    ).toEqual({});
    expect(start[0]?.payload).toMatchObject({ task_id: agent.agent_id, task_type: "Explorer" });
    expect(stop[0]?.payload).toMatchObject({ task_id: agent.agent_id, success: true });
  });

  it("Stop goes through the verifier: revise → decision block with the instruction; the spent budget → {}", async () => {
    await handler(HookName.PostVerify, "qw-eval", () => ({ action: "revise", instruction: "add the units" }));
    const session = newSession();
    const stop = (text: string) =>
      post(
        qwenInput(
          "Stop",
          { stop_hook_active: true, last_assistant_message: text, background_tasks: [], crons: [] },
          session,
        ),
      );
    expect((await stop("120")).body).toEqual({ decision: "block", reason: "add the units" });
    expect((await stop("120 long")).body).toEqual({ decision: "block", reason: "add the units" });
    // Qwen Code reads {"continue": false} on Stop as one more block: the escalation ends the turn as {}.
    expect((await stop("still 120")).body).toEqual({});
  });

  it("its own events (PostToolBatch, MessageDisplay) are recorded only", async () => {
    const session = newSession();
    expect((await post(qwenInput("PostToolBatch", { tool_calls: [] }, session))).body).toEqual({});
    expect(
      (
        await post(
          qwenInput("MessageDisplay", { message_id: "m", displayed_text: "x", is_final: true }, session),
        )
      ).body,
    ).toEqual({});
    await waitFor(
      async () =>
        (await sessionEvents(session.session_id)).filter((e) => e.event === "adapter_dispatch_attempt")
          .length === 2,
    );
    const names = (await sessionEvents(session.session_id))
      .filter((e) => e.event === "adapter_dispatch_attempt")
      .map((e) => e.payload["hook_event_name"]);
    expect(names).toEqual(["PostToolBatch", "MessageDisplay"]);
  });

  it("fails closed when the plane cannot decide: guarded events are refused with a 200, others go on", async () => {
    await withUndecidedPlane(fx.env(), QWEN_CODE_HOOK_PATH, async (send) => {
      expect(await send(shell("ls"))).toMatchObject({
        status: 200,
        body: {
          hookSpecificOutput: {
            permissionDecision: "deny",
            permissionDecisionReason: expect.stringMatching(/could not decide/),
          },
        },
      });
      expect((await send(qwenInput("UserPromptSubmit", { prompt: "hi" }))).body).toMatchObject({
        decision: "block",
      });
      expect(
        (await send(qwenInput("PermissionRequest", { tool_name: "run_shell_command", tool_input: {} }))).body,
      ).toMatchObject({ hookSpecificOutput: { decision: { behavior: "deny" } } });
      expect(await send(qwenInput("Stop", { last_assistant_message: "done" }))).toEqual({
        status: 200,
        body: {},
      });
    });
  });
});
