/**
 * Every row of the Copilot CLI mapping (docs/copilot.md), over HTTP with inputs shaped as Copilot
 * CLI 1.0.102's native command hooks give them (the event named by the URL's `?event=`): what the
 * plane is asked, and what Copilot is answered.
 */
import { randomUUID } from "node:crypto";
import { COPILOT_EVENTS, COPILOT_HOOK_PATH, HookName } from "@geode/contracts";
import { serveApprovals } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { useGatewayFixture, withUndecidedPlane } from "./gateway-support.js";

const fx = useGatewayFixture({ approvalTimeoutMs: 1_500 });

/** A Copilot hook input: the fields every event carries (`cwd` never to be forwarded) and `fields`. */
function copilotInput(
  fields: Record<string, unknown> = {},
  sessionId: string = randomUUID(),
): Record<string, unknown> {
  return { sessionId, timestamp: Date.now(), cwd: "/home/dev/secret-project", ...fields };
}

const post = (event: string | null, body: unknown, token?: string | null) =>
  fx.post(body, {
    path: event === null ? COPILOT_HOOK_PATH : `${COPILOT_HOOK_PATH}?event=${event}`,
    ...(token === undefined ? {} : { token }),
  });

const handler = fx.serve;

const sessionEvents = fx.sessionEvents;

const bashArgs = (command: string) => ({ command, description: "run", mode: "sync", initial_wait: 10 });
const bash = (command: string, sessionId?: string) =>
  copilotInput({ toolName: "bash", toolArgs: bashArgs(command) }, sessionId);

describe("Copilot: the front door", () => {
  it("401 without a known token; 400 without an event or with a body that is not its input; nothing invoked", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "cp-watch", () => null);
    const prompt = copilotInput({ prompt: "hi" });
    expect((await post("userPromptSubmitted", prompt, "nope")).status).toBe(401);
    const unnamed = await post(null, prompt);
    expect(unnamed.status).toBe(400);
    expect(JSON.stringify(unnamed.body)).toContain("?event=");
    expect((await post("userPromptSubmitted", { prompt: "x" })).status).toBe(400);
    expect((await post("preToolUse", copilotInput({ toolArgs: {} }))).status).toBe(400);
    // What Copilot sends under Claude Code-style entries: not its native input (docs/copilot.md).
    const claudeStyle = { hook_event_name: "UserPromptSubmit", session_id: randomUUID(), prompt: "hi" };
    expect((await post(null, claudeStyle)).status).toBe(400);
    expect((await post("UserPromptSubmit", claudeStyle)).status).toBe(400);
    expect(seen).toHaveLength(0);
  });

  it("every event of Copilot CLI 1.0.102 is known to the contract", () => {
    expect(COPILOT_EVENTS.map((e) => e.event)).toEqual([
      "sessionStart",
      "userPromptSubmitted",
      "preToolUse",
      "permissionRequest",
      "postToolUse",
      "postToolUseFailure",
      "agentStop",
      "subagentStart",
      "subagentStop",
      "preCompact",
      "sessionEnd",
      "errorOccurred",
      "userPromptTransformed",
      "notification",
    ]);
  });
});

describe("Copilot: sessions and prompts", () => {
  it("sessionStart starts the session with agent, kind and provider; sessionEnd ends it with Copilot's reason", async () => {
    const seenStart = await handler(HookName.SessionStart, "cp-start", () => null);
    const seenEnd = await handler(HookName.SessionEnd, "cp-end", () => null);
    const sessionId = randomUUID();
    const start = copilotInput({ source: "new", initialPrompt: "do it" }, sessionId);
    expect((await post("sessionStart", start)).body).toEqual({});
    expect(seenStart[0]?.payload).toMatchObject({ provider: "github", resumed: false });
    expect(seenStart[0]?.correlation.run_id).toBe(sessionId);
    expect((await post("sessionEnd", copilotInput({ reason: "complete" }, sessionId))).body).toEqual({});
    expect(seenEnd[0]?.payload).toEqual({ reason: "complete", status: "completed" });
    const started = (await sessionEvents(sessionId)).find((e) => e.event === "session_started");
    expect(started?.payload).toMatchObject({ agent: "laptop", agent_kind: "copilot", provider: "github" });
    expect(JSON.stringify(seenStart)).not.toContain("secret-project");
  });

  it("userPromptSubmitted: block → decision block; rewrite → modifiedPrompt", async () => {
    await handler(HookName.UserPromptSubmit, "cp-prompt", (e) => {
      const text = String(e.payload["user_input"]);
      if (text.includes("secret")) return { action: "block", reason: "no secrets" };
      if (text.includes("shout")) return { action: "rewrite", updates: { user_input: "speak softly" } };
      return null;
    });
    const sessionId = randomUUID();
    const prompt = (text: string) => post("userPromptSubmitted", copilotInput({ prompt: text }, sessionId));
    expect((await prompt("tell me the secret")).body).toEqual({
      decision: "block",
      reason: "cp-prompt: no secrets",
    });
    expect((await prompt("shout it")).body).toEqual({ modifiedPrompt: "speak softly" });
    expect((await prompt("hello")).body).toEqual({});
  });
});

describe("Copilot: tool calls", () => {
  it("preToolUse block → permissionDecision deny with the reason; bash's command is the shell command", async () => {
    const seen = await handler(HookName.PreToolUse, "cp-guard", (e) =>
      String((e.payload["arguments"] as { command: string }).command).includes("rm -rf")
        ? { action: "block", reason: "no" }
        : null,
    );
    expect((await post("preToolUse", bash("rm -rf /"))).body).toEqual({
      permissionDecision: "deny",
      permissionDecisionReason: "cp-guard: no",
    });
    expect(seen[0]?.payload).toMatchObject({ tool_name: "bash", arguments: bashArgs("rm -rf /") });
    expect((await post("preToolUse", bash("ls"))).body).toEqual({});
  });

  it("a rewrite → modifiedArgs alone (no allow: a rewrite grants no permission)", async () => {
    await handler(HookName.PreToolUse, "cp-rewrite", (e) => ({
      action: "rewrite",
      updates: { arguments: { ...(e.payload["arguments"] as object), command: "timeout 60 make" } },
    }));
    expect((await post("preToolUse", bash("make"))).body).toEqual({
      modifiedArgs: bashArgs("timeout 60 make"),
    });
  });

  it("request_permission: nobody answering → ask; an approver's allow → allow", async () => {
    await handler(HookName.PreToolUse, "cp-ask", () => ({
      action: "request_permission",
      reason: "deploys need a person",
    }));
    expect((await post("preToolUse", bash("deploy"))).body).toEqual({
      permissionDecision: "ask",
      permissionDecisionReason: "cp-ask: deploys need a person",
    });
    const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, () => ({
      decision: "allow",
      reason: "on call says yes",
    }));
    await fx.env().nc.flush();
    try {
      expect((await post("preToolUse", bash("deploy"))).body).toMatchObject({ permissionDecision: "allow" });
    } finally {
      await approver.close();
    }
  });

  it("permissionRequest: deny → behavior deny with a message; an approver → allow; nobody → {}", async () => {
    await handler(HookName.PermissionRequest, "cp-perm", (e) =>
      String(e.payload["detail"]).includes("/etc") ? { action: "deny", reason: "not /etc" } : null,
    );
    // As Copilot sends it: its own hookName, the call's input as `toolInput`.
    const ask = (command: string) =>
      copilotInput({ hookName: "permissionRequest", toolName: "bash", toolInput: { command } });
    expect((await post(null, ask("cat /etc/shadow"))).body).toEqual({
      behavior: "deny",
      message: "cp-perm: not /etc",
    });
    expect((await post("permissionRequest", ask("ls"))).body).toEqual({});
    const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, () => ({
      decision: "allow",
      reason: "fine",
    }));
    await fx.env().nc.flush();
    try {
      expect((await post("permissionRequest", ask("ls"))).body).toEqual({ behavior: "allow" });
    } finally {
      await approver.close();
    }
  });

  it("postToolUse: toolResult is the result; add_context → additionalContext; a block reaches the model as context", async () => {
    const seen = await handler(HookName.PostToolUse, "cp-post", (e) =>
      e.payload["has_error"]
        ? { action: "block", reason: "look at the failure" }
        : { action: "add_context", reason: "note this" },
    );
    const result = { resultType: "success", textResultForLlm: "hi\n" };
    const input = copilotInput({ toolName: "bash", toolArgs: bashArgs("echo hi"), toolResult: result });
    expect((await post("postToolUse", input)).body).toEqual({ additionalContext: "note this" });
    expect(seen[0]?.payload).toMatchObject({ result, has_error: false, executed: true });
    const failed = copilotInput(
      { toolName: "bash", toolArgs: bashArgs("false"), error: "exit code 1" },
      input["sessionId"] as string,
    );
    expect((await post("postToolUseFailure", failed)).body).toEqual({
      additionalContext: "geode blocked this tool result: cp-post: look at the failure",
    });
    expect(seen[1]?.payload).toMatchObject({ result: { error: "exit code 1" }, has_error: true });
    const events = await sessionEvents(input["sessionId"] as string);
    expect(events.map((e) => e.event)).toEqual(
      expect.arrayContaining(["tool_exec_started", "tool_exec_ended", "tool_exec_failed"]),
    );
  });
});

describe("Copilot: agentStop, sub-agents, compaction, errors", () => {
  it("agentStop goes through the verifier: revise → decision block with the instruction; the budget ends it", async () => {
    await handler(HookName.PostVerify, "cp-eval", () => ({ action: "revise", instruction: "add the units" }));
    const sessionId = randomUUID();
    const stop = (text: string) =>
      post("agentStop", copilotInput({ stopReason: "end_turn", lastAssistantMessage: text }, sessionId));
    expect((await stop("120")).body).toEqual({ decision: "block", reason: "add the units" });
    expect((await stop("120 long")).body).toEqual({ decision: "block", reason: "add the units" });
    expect((await stop("still 120")).body).toEqual({});
  });

  it("agentStop without the answer text is recorded, not verified", async () => {
    const seen = await handler(HookName.PostVerify, "cp-eval-none", () => ({
      action: "revise",
      instruction: "x",
    }));
    const sessionId = randomUUID();
    expect((await post("agentStop", copilotInput({ stopReason: "end_turn" }, sessionId))).body).toEqual({});
    expect(seen).toHaveLength(0);
    await waitFor(async () =>
      (await sessionEvents(sessionId)).some((e) => e.event === "adapter_dispatch_attempt"),
    );
  });

  it("subagentStart and subagentStop reach their hooks with Copilot's agent name; preCompact reaches PreCompact", async () => {
    const start = await handler(HookName.SubagentStart, "cp-sub", () => null);
    const stop = await handler(HookName.SubagentStop, "cp-sub-stop", () => null);
    const compact = await handler(HookName.PreCompact, "cp-compact", () => ({
      action: "defer",
      reason: "no",
    }));
    const sessionId = randomUUID();
    const agent = { agentName: `explore-${randomUUID().slice(0, 8)}`, transcriptPath: "/home/dev/t.jsonl" };
    expect((await post("subagentStart", copilotInput(agent, sessionId))).body).toEqual({});
    expect(
      (
        await post(
          "subagentStop",
          copilotInput({ ...agent, response: "found it", stopReason: "end_turn" }, sessionId),
        )
      ).body,
    ).toEqual({});
    expect(start[0]?.payload).toMatchObject({ task_id: agent.agentName, parent_session_key: sessionId });
    expect(stop[0]?.payload).toMatchObject({ task_id: agent.agentName, success: true });
    expect(JSON.stringify([...start, ...stop])).not.toContain("found it");
    expect((await post("preCompact", copilotInput({ trigger: "auto" }, sessionId))).body).toEqual({});
    expect(compact[0]?.payload).toMatchObject({ trigger: "auto", provider: "github" });
  });

  it("errorOccurred is a runtime event (never its text); other events are recorded only", async () => {
    const sessionId = randomUUID();
    const error = (context: string) =>
      copilotInput(
        { error: "token sk-live-123 rejected", errorContext: context, recoverable: false },
        sessionId,
      );
    expect((await post("errorOccurred", error("model_call"))).body).toEqual({});
    expect((await post("errorOccurred", error("tool_execution"))).body).toEqual({});
    expect((await post("notification", copilotInput({}, sessionId))).body).toEqual({});
    expect(
      (await post("userPromptTransformed", copilotInput({ prompt: "p", transformedPrompt: "q" }, sessionId)))
        .body,
    ).toEqual({});
    await waitFor(
      async () =>
        (await sessionEvents(sessionId)).filter((e) => e.event === "adapter_dispatch_attempt").length === 3,
    );
    const events = await sessionEvents(sessionId);
    expect(events.find((e) => e.event === "llm_call_failed")?.payload).toMatchObject({ agent: "copilot" });
    expect(
      events.filter((e) => e.event === "adapter_dispatch_attempt").map((e) => e.payload["hook_event_name"]),
    ).toEqual(["errorOccurred", "notification", "userPromptTransformed"]);
    expect(JSON.stringify(events)).not.toContain("sk-live-123");
  });

  it("fails closed when the plane cannot decide: guarded events are refused with a 200, others go on", async () => {
    await withUndecidedPlane(fx.env(), COPILOT_HOOK_PATH, async (post) => {
      const send = (event: string, body: unknown) => post(body, `?event=${event}`);
      expect(await send("preToolUse", bash("ls"))).toMatchObject({
        status: 200,
        body: {
          permissionDecision: "deny",
          permissionDecisionReason: expect.stringMatching(/could not decide/),
        },
      });
      expect((await send("userPromptSubmitted", copilotInput({ prompt: "hi" }))).body).toMatchObject({
        decision: "block",
      });
      expect(
        (await send("permissionRequest", copilotInput({ toolName: "bash", toolInput: {} }))).body,
      ).toMatchObject({ behavior: "deny" });
      const done = copilotInput({ toolName: "bash", toolArgs: {}, toolResult: {} });
      expect(await send("postToolUse", done)).toEqual({ status: 200, body: {} });
      expect(await send("agentStop", copilotInput({ lastAssistantMessage: "done" }))).toEqual({
        status: 200,
        body: {},
      });
    });
  });
});
