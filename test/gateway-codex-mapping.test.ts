/**
 * Every row of the Codex mapping (docs/codex.md), over HTTP with inputs shaped as Codex 0.171's
 * hook schemas give them: what the plane is asked, and what Codex is answered.
 */
import { randomUUID } from "node:crypto";
import { startAgentGateway } from "@geode/agent-gateway";
import { names as buildNames, CODEX_EVENTS, CODEX_HOOK_PATH, HookName } from "@geode/contracts";
import { serveApprovals } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { addAgent, useGatewayFixture } from "./gateway-support.js";

const fx = useGatewayFixture({ approvalTimeoutMs: 1_500 });

/** A Codex hook input: the fields every event carries (the local ones never to be forwarded) and `fields`. */
function codexInput(
  event: string,
  fields: Record<string, unknown> = {},
  session: { session_id: string; turn_id?: string } = { session_id: randomUUID(), turn_id: randomUUID() },
): Record<string, unknown> {
  return {
    session_id: session.session_id,
    ...(session.turn_id ? { turn_id: session.turn_id } : {}),
    transcript_path: null,
    cwd: "/home/dev/secret-project",
    hook_event_name: event,
    model: "gpt-5-codex",
    permission_mode: "bypassPermissions",
    ...fields,
  };
}

const post = (body: unknown, token?: string | null) =>
  fx.post(body, { path: CODEX_HOOK_PATH, ...(token === undefined ? {} : { token }) });

const handler = fx.serveRecorded;

const sessionEvents = fx.sessionEvents;

const bash = (
  command: string,
  session?: { session_id: string; turn_id?: string },
  mode = "bypassPermissions",
) =>
  codexInput(
    "PreToolUse",
    {
      tool_name: "Bash",
      tool_input: { command },
      tool_use_id: `call_${randomUUID()}`,
      permission_mode: mode,
    },
    session,
  );

describe("Codex: the front door", () => {
  it("401 without a known token, 400 for a body that is not a Codex input, nothing invoked", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "cx-watch", () => null);
    expect((await post(codexInput("UserPromptSubmit", { prompt: "hi" }), "nope")).status).toBe(401);
    expect((await post({ hook_event_name: "UserPromptSubmit", prompt: "x" })).status).toBe(400);
    expect((await post(codexInput("PreToolUse", { tool_input: {} }))).status).toBe(400);
    expect(seen).toHaveLength(0);
  });

  it("every mapped event is known to the contract", () => {
    expect(CODEX_EVENTS.map((e) => e.event)).toEqual([
      "SessionStart",
      "UserPromptSubmit",
      "PreToolUse",
      "PermissionRequest",
      "PostToolUse",
      "PreCompact",
      "PostCompact",
      "SubagentStart",
      "SubagentStop",
      "Stop",
      "Interrupt",
      "SessionEnd",
    ]);
  });
});

describe("Codex: sessions and prompts", () => {
  it("SessionStart starts the session with Codex's model, agent and kind; SessionEnd ends it", async () => {
    const seenStart = await handler(HookName.SessionStart, "cx-start", () => null);
    const seenEnd = await handler(HookName.SessionEnd, "cx-end", () => null);
    const session = { session_id: randomUUID() };
    expect((await post(codexInput("SessionStart", { source: "startup" }, session))).body).toEqual({});
    expect(seenStart[0]?.payload).toMatchObject({ model: "gpt-5-codex", provider: "openai", resumed: false });
    expect(seenStart[0]?.correlation.run_id).toBe(session.session_id);
    expect((await post(codexInput("SessionEnd", { reason: "other" }, session))).body).toEqual({});
    expect(seenEnd[0]?.payload).toEqual({ reason: "other", status: "completed" });
    const started = (await sessionEvents(session.session_id)).find((e) => e.event === "session_started");
    expect(started?.payload).toMatchObject({ agent: "laptop", agent_kind: "codex", model: "gpt-5-codex" });
  });

  it("UserPromptSubmit: block → decision block; the turn is Codex's turn_id", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "cx-prompt", (e) =>
      String(e.payload["user_input"]).includes("secret") ? { action: "block", reason: "no secrets" } : null,
    );
    const session = { session_id: randomUUID(), turn_id: `turn-${randomUUID()}` };
    expect(
      (await post(codexInput("UserPromptSubmit", { prompt: "tell me the secret" }, session))).body,
    ).toEqual({
      decision: "block",
      reason: "cx-prompt: no secrets",
    });
    expect((await post(codexInput("UserPromptSubmit", { prompt: "hello" }, session))).body).toEqual({});
    expect(seen[0]?.correlation.turn_id).toBe(session.turn_id);
    expect(JSON.stringify(seen)).not.toContain("secret-project");
  });
});

describe("Codex: tool calls", () => {
  it("PreToolUse block → permissionDecision deny with a non-empty reason; the call id is tool_use_id", async () => {
    const seen = await handler(HookName.PreToolUse, "cx-guard", (e) =>
      String((e.payload["arguments"] as { command: string }).command).includes("rm -rf")
        ? { action: "block", reason: "no" }
        : null,
    );
    const input = bash("rm -rf /");
    expect((await post(input)).body).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "cx-guard: no",
      },
    });
    expect(seen[0]?.correlation.tool_call_id).toBe(input["tool_use_id"]);
    expect((await post(bash("ls"))).body).toEqual({});
  });

  it("a rewrite is allow + updatedInput under bypassPermissions, and a deny naming the rewrite otherwise", async () => {
    await handler(HookName.PreToolUse, "cx-rewrite", (e) => ({
      action: "rewrite",
      updates: { arguments: { ...(e.payload["arguments"] as object), command: "timeout 60 make" } },
    }));
    expect((await post(bash("make"))).body).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "allow",
        permissionDecisionReason: "rewritten by cx-rewrite",
        updatedInput: { command: "timeout 60 make" },
      },
    });
    const denied = (await post(bash("make", undefined, "default"))).body as {
      hookSpecificOutput: { permissionDecision: string; permissionDecisionReason: string };
    };
    expect(denied.hookSpecificOutput.permissionDecision).toBe("deny");
    expect(denied.hookSpecificOutput.permissionDecisionReason).toMatch(
      /rewritten by cx-rewrite .*only with an allow/,
    );
  });

  it("request_permission nobody answers is a deny (Codex cannot ask); an approver's allow is an allow", async () => {
    await handler(HookName.PreToolUse, "cx-ask", () => ({
      action: "request_permission",
      reason: "deploys need a person",
    }));
    const unanswered = (await post(bash("deploy"))).body as { hookSpecificOutput: Record<string, string> };
    expect(unanswered.hookSpecificOutput["permissionDecision"]).toBe("deny");
    const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, () => ({
      decision: "allow",
      reason: "on call says yes",
    }));
    await fx.env().nc.flush();
    try {
      const allowed = (await post(bash("deploy"))).body as { hookSpecificOutput: Record<string, string> };
      expect(allowed.hookSpecificOutput).toMatchObject({ permissionDecision: "allow" });
    } finally {
      await approver.close();
    }
  });

  it("PermissionRequest: deny → decision.behavior deny; nobody answering → {}", async () => {
    await handler(HookName.PermissionRequest, "cx-perm", (e) =>
      String(e.payload["detail"]).includes("/etc") ? { action: "deny", reason: "not /etc" } : null,
    );
    const ask = (command: string) =>
      codexInput("PermissionRequest", { tool_name: "Bash", tool_input: { command } });
    expect((await post(ask("cat /etc/shadow"))).body).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: "cx-perm: not /etc" },
      },
    });
    expect((await post(ask("ls"))).body).toEqual({});
  });

  it("PostToolUse: Codex's text response is the result; add_context → additionalContext; block → decision block", async () => {
    const seen = await handler(HookName.PostToolUse, "cx-post", () => ({
      action: "add_context",
      reason: "note this",
    }));
    const input = codexInput("PostToolUse", {
      tool_name: "Bash",
      tool_input: { command: "echo hi" },
      tool_response: "hi\n",
      tool_use_id: "call_post_1",
    });
    expect((await post(input)).body).toEqual({
      hookSpecificOutput: { hookEventName: "PostToolUse", additionalContext: "note this" },
    });
    expect(seen[0]?.payload).toMatchObject({ result: { value: "hi\n" }, has_error: false, executed: true });
    const events = await sessionEvents(input["session_id"] as string);
    expect(events.map((e) => e.event)).toEqual(
      expect.arrayContaining(["tool_exec_started", "tool_exec_ended"]),
    );
  });
});

describe("Codex: compaction, sub-agents, Stop, interrupts", () => {
  it("PreCompact and PostCompact reach their hooks; a defer is recorded and compaction goes on", async () => {
    await handler(HookName.PreCompact, "cx-defer", () => ({ action: "defer", reason: "not now" }));
    const post2 = await handler(HookName.PostCompact, "cx-post-compact", () => null);
    expect((await post(codexInput("PreCompact", { trigger: "auto" }))).body).toEqual({});
    expect((await post(codexInput("PostCompact", { trigger: "manual" }))).body).toEqual({});
    expect(post2[0]?.payload).toMatchObject({ trigger: "manual", provider: "openai", model: "" });
  });

  it("SubagentStart and SubagentStop reach their hooks with Codex's agent id", async () => {
    const start = await handler(HookName.SubagentStart, "cx-sub", () => null);
    const stop = await handler(HookName.SubagentStop, "cx-sub-stop", () => null);
    const session = { session_id: randomUUID(), turn_id: randomUUID() };
    const agent = { agent_id: `agent-${randomUUID()}`, agent_type: "worker" };
    expect((await post(codexInput("SubagentStart", agent, session))).body).toEqual({});
    expect(
      (await post(codexInput("SubagentStop", { ...agent, stop_hook_active: false }, session))).body,
    ).toEqual({});
    expect(start[0]?.payload).toMatchObject({
      task_id: agent.agent_id,
      task_type: "worker",
      parent_session_key: session.session_id,
    });
    expect(stop[0]?.payload).toMatchObject({ task_id: agent.agent_id, success: true });
  });

  it("Stop goes through the verifier: revise → decision block with the instruction; the budget ends it", async () => {
    await handler(HookName.PostVerify, "cx-eval", () => ({ action: "revise", instruction: "add the units" }));
    const session = { session_id: randomUUID(), turn_id: randomUUID() };
    const stop = (text: string) =>
      post(codexInput("Stop", { stop_hook_active: true, last_assistant_message: text }, session));
    expect((await stop("120")).body).toEqual({ decision: "block", reason: "add the units" });
    expect((await stop("120 long")).body).toEqual({ decision: "block", reason: "add the units" });
    const third = (await stop("still 120")).body as { continue?: boolean; stopReason?: string };
    expect(third.continue).toBe(false);
    expect(third.stopReason).toMatch(/escalate budget exhausted/);
  });

  it("Interrupt is recorded as execution_cancelled; an event Codex may add later is recorded only", async () => {
    const session = { session_id: randomUUID(), turn_id: randomUUID() };
    expect((await post(codexInput("Interrupt", {}, session))).body).toEqual({});
    expect((await post(codexInput("SomethingNew", { detail: "x" }, session))).body).toEqual({});
    await waitFor(async () =>
      (await sessionEvents(session.session_id)).some((e) => e.event === "adapter_dispatch_attempt"),
    );
    const events = await sessionEvents(session.session_id);
    expect(events.find((e) => e.event === "execution_cancelled")?.payload).toMatchObject({ agent: "codex" });
    expect(events.find((e) => e.event === "adapter_dispatch_attempt")?.payload).toMatchObject({
      adapter: "codex",
      hook_event_name: "SomethingNew",
    });
  });

  it("fails closed when the plane cannot decide: guarded events are refused with a 200, others go on", async () => {
    // A namespace where no hook-dispatcher or verifier runs.
    const names = buildNames(`${fx.env().ns}_x`);
    const token = await addAgent({ ...fx.env(), names }, "lonely");
    const gateway = await startAgentGateway({
      nc: fx.env().nc,
      names,
      config: { host: "127.0.0.1", port: 0, hookTimeoutMs: 300, verifyTimeoutMs: 300 },
    });
    try {
      await waitFor(() => gateway.agents() === 1);
      const send = async (body: unknown) => {
        const res = await fetch(`${gateway.url}${CODEX_HOOK_PATH}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as unknown };
      };
      expect(await send(bash("ls"))).toMatchObject({
        status: 200,
        body: {
          hookSpecificOutput: {
            permissionDecision: "deny",
            permissionDecisionReason: expect.stringMatching(/could not decide/),
          },
        },
      });
      expect((await send(codexInput("UserPromptSubmit", { prompt: "hi" }))).body).toMatchObject({
        decision: "block",
      });
      expect(
        (await send(codexInput("PermissionRequest", { tool_name: "Bash", tool_input: {} }))).body,
      ).toMatchObject({
        hookSpecificOutput: { decision: { behavior: "deny" } },
      });
      const done = codexInput("PostToolUse", {
        tool_name: "Bash",
        tool_input: {},
        tool_response: "",
        tool_use_id: "c1",
      });
      expect(await send(done)).toEqual({ status: 200, body: {} });
      expect(await send(codexInput("Stop", { last_assistant_message: "done" }))).toEqual({
        status: 200,
        body: {},
      });
    } finally {
      await gateway.stop();
    }
  });
});
