/**
 * Every row of the Gemini CLI mapping (docs/gemini-cli.md), over HTTP with inputs shaped as Gemini
 * CLI 0.61.0 sends them to a command hook: what the plane is asked, and what Gemini is answered.
 */
import { randomUUID } from "node:crypto";
import { GEMINI_CLI_EVENTS, GEMINI_CLI_HOOK_PATH, HookName } from "@geode/contracts";
import { serveApprovals } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { useGatewayFixture, withUndecidedPlane } from "./gateway-support.js";

const fx = useGatewayFixture({ approvalTimeoutMs: 1_500 });

/** A Gemini CLI hook input: the fields every event carries (the local ones never to be forwarded) and `fields`. */
function geminiInput(
  event: string,
  fields: Record<string, unknown> = {},
  session: { session_id: string } = { session_id: randomUUID() },
): Record<string, unknown> {
  return {
    session_id: session.session_id,
    transcript_path: "/home/dev/.gemini/tmp/secret-project/chats/session.json",
    cwd: "/home/dev/secret-project",
    hook_event_name: event,
    timestamp: new Date().toISOString(),
    ...fields,
  };
}

const post = (body: unknown, token?: string | null) =>
  fx.post(body, { path: GEMINI_CLI_HOOK_PATH, ...(token === undefined ? {} : { token }) });

const handler = fx.serve;
const sessionEvents = fx.sessionEvents;

const shell = (command: string, session?: { session_id: string }) =>
  geminiInput(
    "BeforeTool",
    { tool_name: "run_shell_command", tool_input: { command, description: "runs it" } },
    session,
  );

describe("Gemini CLI: the front door", () => {
  it("401 without a known token, 400 for a body that is not a Gemini input, nothing invoked", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "gm-watch", () => null);
    expect((await post(geminiInput("BeforeAgent", { prompt: "hi" }), "nope")).status).toBe(401);
    expect((await post({ hook_event_name: "BeforeAgent", prompt: "x" })).status).toBe(400);
    expect((await post(geminiInput("BeforeTool", { tool_input: {} }))).status).toBe(400);
    expect((await post(geminiInput("BeforeAgent", {}))).status).toBe(400);
    expect(seen).toHaveLength(0);
  });

  it("every event of Gemini CLI 0.61.0 is known to the contract", () => {
    expect(GEMINI_CLI_EVENTS.map((e) => e.event).sort()).toEqual(
      [
        "BeforeTool",
        "AfterTool",
        "BeforeAgent",
        "Notification",
        "AfterAgent",
        "SessionStart",
        "SessionEnd",
        "PreCompress",
        "BeforeModel",
        "AfterModel",
        "BeforeToolSelection",
      ].sort(),
    );
  });
});

describe("Gemini CLI: sessions and prompts", () => {
  it("SessionStart starts the session with Gemini's agent and kind; SessionEnd ends it", async () => {
    const seenStart = await handler(HookName.SessionStart, "gm-start", () => null);
    const seenEnd = await handler(HookName.SessionEnd, "gm-end", () => null);
    const session = { session_id: randomUUID() };
    expect((await post(geminiInput("SessionStart", { source: "startup" }, session))).body).toEqual({});
    expect(seenStart[0]?.payload).toMatchObject({ provider: "google", resumed: false });
    expect(seenStart[0]?.correlation.run_id).toBe(session.session_id);
    expect((await post(geminiInput("SessionEnd", { reason: "exit" }, session))).body).toEqual({});
    expect(seenEnd[0]?.payload).toEqual({ reason: "exit", status: "completed" });
    const started = (await sessionEvents(session.session_id)).find((e) => e.event === "session_started");
    expect(started?.payload).toMatchObject({ agent: "laptop", agent_kind: "gemini-cli", provider: "google" });
  });

  it("BeforeAgent → UserPromptSubmit: block → decision deny; a rewrite is a deny carrying the new prompt", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "gm-prompt", (e) => {
      const prompt = String(e.payload["user_input"]);
      if (prompt.includes("secret")) return { action: "block", reason: "no secrets" };
      if (prompt.includes("rm")) return { action: "rewrite", updates: { user_input: "list files" } };
      return null;
    });
    const session = { session_id: randomUUID() };
    expect((await post(geminiInput("BeforeAgent", { prompt: "tell me the secret" }, session))).body).toEqual({
      decision: "deny",
      reason: "gm-prompt: no secrets",
    });
    const rewritten = (await post(geminiInput("BeforeAgent", { prompt: "rm it" }, session))).body as {
      decision: string;
      reason: string;
    };
    expect(rewritten.decision).toBe("deny");
    expect(rewritten.reason).toMatch(/Send this instead:\nlist files$/);
    expect((await post(geminiInput("BeforeAgent", { prompt: "hello" }, session))).body).toEqual({});
    // The turn is a digest of the prompt, never the prompt; cwd and transcript_path go nowhere.
    expect(seen[0]?.correlation.turn_id).toMatch(/^prompt-[0-9a-f]{32}$/);
    expect(JSON.stringify(seen)).not.toContain("secret-project");
  });
});

describe("Gemini CLI: tool calls", () => {
  it("BeforeTool block → decision deny with the reason", async () => {
    const seen = await handler(HookName.PreToolUse, "gm-guard", (e) =>
      String((e.payload["arguments"] as { command: string }).command).includes("rm -rf")
        ? { action: "block", reason: "no" }
        : null,
    );
    expect((await post(shell("rm -rf /"))).body).toEqual({ decision: "deny", reason: "gm-guard: no" });
    expect(seen[0]?.payload).toMatchObject({
      tool_name: "run_shell_command",
      arguments: { command: "rm -rf /" },
    });
    expect((await post(shell("ls"))).body).toEqual({});
  });

  it("a rewrite → hookSpecificOutput.tool_input; one that drops an argument is a deny naming it", async () => {
    await handler(HookName.PreToolUse, "gm-rewrite", (e) => {
      const args = e.payload["arguments"] as Record<string, unknown>;
      if (args["command"] === "make")
        return { action: "rewrite", updates: { arguments: { ...args, command: "timeout 60 make" } } };
      return { action: "rewrite", updates: { arguments: { command: "true" } } };
    });
    expect((await post(shell("make"))).body).toEqual({
      hookSpecificOutput: {
        hookEventName: "BeforeTool",
        tool_input: { command: "timeout 60 make", description: "runs it" },
      },
    });
    const dropped = (await post(shell("other"))).body as { decision: string; reason: string };
    expect(dropped.decision).toBe("deny");
    expect(dropped.reason).toMatch(/removes description/);
  });

  it("request_permission nobody answers is a deny (a hook cannot ask Gemini's user); an approver's allow lets it go", async () => {
    await handler(HookName.PreToolUse, "gm-ask", () => ({
      action: "request_permission",
      reason: "deploys need a person",
    }));
    const unanswered = (await post(shell("deploy"))).body as { decision: string; reason: string };
    expect(unanswered.decision).toBe("deny");
    expect(unanswered.reason).toMatch(/nobody answered/);
    const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, () => ({
      decision: "allow",
      reason: "on call says yes",
    }));
    await fx.env().nc.flush();
    try {
      expect((await post(shell("deploy"))).body).toEqual({});
    } finally {
      await approver.close();
    }
  });

  it("AfterTool → PostToolUse: add_context → additionalContext; block → deny; an error marks it failed", async () => {
    const seen = await handler(HookName.PostToolUse, "gm-post", (e) =>
      e.payload["has_error"]
        ? { action: "block", reason: "hide it" }
        : { action: "add_context", reason: "note this" },
    );
    const session = { session_id: randomUUID() };
    const done = (error?: Record<string, unknown>) =>
      geminiInput(
        "AfterTool",
        {
          tool_name: "run_shell_command",
          tool_input: { command: "echo hi" },
          tool_response: { llmContent: "hi\n", returnDisplay: "hi\n", ...(error ? { error } : {}) },
        },
        session,
      );
    expect((await post(done())).body).toEqual({
      hookSpecificOutput: { hookEventName: "AfterTool", additionalContext: "note this" },
    });
    expect(seen[0]?.payload).toMatchObject({
      result: { llmContent: "hi\n" },
      has_error: false,
      executed: true,
    });
    expect((await post(done({ message: "exit 1", type: "execution_failed" }))).body).toEqual({
      decision: "deny",
      reason: "gm-post: hide it",
    });
    await waitFor(async () =>
      (await sessionEvents(session.session_id)).some((e) => e.event === "tool_exec_failed"),
    );
    const events = await sessionEvents(session.session_id);
    expect(events.find((e) => e.event === "tool_exec_started")?.payload).toMatchObject({
      tool_name: "run_shell_command",
      effect: "mutation",
    });
  });
});

describe("Gemini CLI: AfterAgent, compression, record-only events", () => {
  it("AfterAgent goes through the verifier: revise → deny with the instruction; the budget ends it", async () => {
    const seen = await handler(HookName.PostVerify, "gm-eval", () => ({
      action: "revise",
      instruction: "add the units",
    }));
    const session = { session_id: randomUUID() };
    const verdictOf = (response: string, active: boolean) =>
      post(
        geminiInput(
          "AfterAgent",
          { prompt: "how far?", prompt_response: response, stop_hook_active: active },
          session,
        ),
      );
    expect((await verdictOf("120", false)).body).toEqual({ decision: "deny", reason: "add the units" });
    expect((await verdictOf("120 long", true)).body).toEqual({ decision: "deny", reason: "add the units" });
    const third = (await verdictOf("still 120", true)).body as { continue?: boolean; stopReason?: string };
    expect(third.continue).toBe(false);
    expect(third.stopReason).toMatch(/escalate budget exhausted/);
    // Every attempt of the turn is one root turn: the digest of its prompt.
    expect(new Set(seen.map((e) => e.correlation.turn_id)).size).toBe(1);
  });

  it("PreCompress reaches PreCompact; a defer is recorded and compression goes on", async () => {
    const seen = await handler(HookName.PreCompact, "gm-defer", () => ({
      action: "defer",
      reason: "not now",
    }));
    expect((await post(geminiInput("PreCompress", { trigger: "auto" }))).body).toEqual({});
    expect(seen[0]?.payload).toMatchObject({ trigger: "auto", provider: "google" });
  });

  it("BeforeModel, AfterModel, BeforeToolSelection, Notification and unknown events are recorded only", async () => {
    const session = { session_id: randomUUID() };
    const llm_request = { model: "gemini-2.5-pro", messages: [{ role: "user", content: "secret plans" }] };
    const events: Array<[string, Record<string, unknown>]> = [
      ["BeforeModel", { llm_request }],
      ["AfterModel", { llm_request, llm_response: { candidates: [] } }],
      ["BeforeToolSelection", { llm_request }],
      ["Notification", { notification_type: "ToolPermission", message: "m", details: {} }],
      ["SomethingNew", { detail: "x" }],
    ];
    for (const [event, fields] of events)
      expect((await post(geminiInput(event, fields, session))).body, event).toEqual({});
    await waitFor(
      async () =>
        (await sessionEvents(session.session_id)).filter((e) => e.event === "adapter_dispatch_attempt")
          .length === events.length,
    );
    const recorded = (await sessionEvents(session.session_id)).filter(
      (e) => e.event === "adapter_dispatch_attempt",
    );
    expect(recorded.map((e) => e.payload["hook_event_name"])).toEqual(events.map(([event]) => event));
    expect(recorded[3]?.payload).toMatchObject({
      adapter: "gemini-cli",
      notification_type: "ToolPermission",
    });
    expect(JSON.stringify(recorded)).not.toContain("secret plans");
  });

  it("fails closed when the plane cannot decide: guarded events are refused with a 200, others go on", async () => {
    await withUndecidedPlane(fx.env(), GEMINI_CLI_HOOK_PATH, async (send) => {
      expect(await send(shell("ls"))).toMatchObject({
        status: 200,
        body: { decision: "deny", reason: expect.stringMatching(/could not decide/) },
      });
      expect((await send(geminiInput("BeforeAgent", { prompt: "hi" }))).body).toMatchObject({
        decision: "deny",
      });
      const done = geminiInput("AfterTool", {
        tool_name: "run_shell_command",
        tool_input: {},
        tool_response: { llmContent: "" },
      });
      expect(await send(done)).toEqual({ status: 200, body: {} });
      expect(await send(geminiInput("AfterAgent", { prompt: "p", prompt_response: "done" }))).toEqual({
        status: 200,
        body: {},
      });
    });
  });
});
