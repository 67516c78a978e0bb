import { randomUUID } from "node:crypto";
import { startAgentGateway } from "@geode/agent-gateway";
import { CLAUDE_CODE_HOOK_PATH, HookName, type TimelineRecord } from "@geode/contracts";
import { serveApprovals } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { ccInput, useGatewayFixture, withUndecidedPlane } from "./gateway-support.js";
import { timelineOf } from "./verify-support.js";

const fx = useGatewayFixture({ approvalTimeoutMs: 1_500 });

const handler = fx.serve;
const sessionEvents = fx.sessionEvents;
const sessionTimeline = async (sessionId: string) =>
  (await timelineOf(fx.env().jsm, fx.env().names.timelineStream)).filter(
    (r: TimelineRecord) => r.correlation.session_id === sessionId,
  );

describe("the HTTP front door", () => {
  it("answers /healthz with ok", async () => {
    const res = await fetch(`${fx.gateway().url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("refuses a missing or unknown token with 401 and invokes nothing", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "watch-401", () => null);
    const input = ccInput("UserPromptSubmit", { prompt: "hello" });
    for (const token of [null, "not-a-known-token", ""]) {
      const res = await fx.post(input, { token });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error: { message: "missing or unknown bearer token" } });
    }
    const wrongScheme = await fetch(`${fx.gateway().url}${CLAUDE_CODE_HOOK_PATH}`, {
      method: "POST",
      headers: { authorization: `Basic ${fx.token()}` },
      body: JSON.stringify(input),
    });
    expect(wrongScheme.status).toBe(401);
    expect(seen).toHaveLength(0);
    expect(await sessionEvents(input["session_id"] as string)).toEqual([]);
  });

  it("answers 400 to unparseable or incomplete bodies, 413 past the size bound, 404 and 405 elsewhere", async () => {
    expect((await fx.post(null, { raw: "{not json" })).status).toBe(400);
    expect((await fx.post(null, { raw: "[1,2]" })).status).toBe(400);
    expect((await fx.post(null, { raw: "\u00ff" })).status).toBe(400);
    expect((await fx.post({ hook_event_name: "UserPromptSubmit", prompt: "x" })).status).toBe(400);
    const noTool = await fx.post(ccInput("PreToolUse", { tool_input: {} }));
    expect(noTool.status).toBe(400);
    expect(noTool.body).toMatchObject({
      error: { code: "invalid_request", message: expect.stringMatching(/PreToolUse: tool_name/) },
    });
    const big = await fx.post(ccInput("UserPromptSubmit", { prompt: "x".repeat(1024 * 1024 + 1) }));
    expect(big.status).toBe(413);
    expect((await fetch(`${fx.gateway().url}/v2/nothing`, { method: "POST" })).status).toBe(404);
    expect((await fetch(`${fx.gateway().url}${CLAUDE_CODE_HOOK_PATH}`)).status).toBe(405);
    // …and it keeps serving.
    expect(
      (await fx.post(ccInput("Notification", { message: "m", notification_type: "idle_prompt" }))).status,
    ).toBe(200);
  });
});

describe("UserPromptSubmit", () => {
  it("maps the prompt to user_input with the plane's correlation, never forwarding transcript_path or cwd", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "observe-prompt", () => null);
    const input = ccInput("UserPromptSubmit", { prompt: "list the files" });
    const res = await fx.post(input);
    expect(res).toEqual({ status: 200, body: {} });
    expect(seen).toHaveLength(1);
    const e = seen[0]!;
    expect(e.payload).toEqual({ user_input: "list the files" });
    expect(e.correlation).toMatchObject({
      session_id: input["session_id"],
      run_id: input["session_id"],
      turn_id: input["prompt_id"],
      tool_call_id: "",
    });
    expect(JSON.stringify(e)).not.toMatch(/secret-project|\.jsonl/);
  });

  it("block → decision block with the handler's reason", async () => {
    await handler(HookName.UserPromptSubmit, "no-deploy", () => ({
      action: "block",
      reason: "no deploys on Friday",
    }));
    const res = await fx.post(ccInput("UserPromptSubmit", { prompt: "deploy it" }));
    expect(res).toEqual({
      status: 200,
      body: { decision: "block", reason: "no-deploy: no deploys on Friday" },
    });
  });

  it("rewrite → the original prompt is blocked and the reason carries the rewritten one", async () => {
    await handler(HookName.UserPromptSubmit, "polite", () => ({
      action: "rewrite",
      reason: "tone",
      updates: { user_input: "please list the files" },
    }));
    const res = await fx.post(ccInput("UserPromptSubmit", { prompt: "list the files!!" }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      decision: "block",
      reason: expect.stringContaining("please list the files"),
    });
  });

  it("sanitizes the payload before handlers see it (secrets masked)", async () => {
    const seen = await handler(HookName.UserPromptSubmit, "observe-secret", () => null);
    await fx.post(ccInput("UserPromptSubmit", { prompt: "use key sk-live-1234567890abcdefghijklmnop now" }));
    expect(JSON.stringify(seen[0]!.payload)).not.toContain("sk-live-1234567890abcdefghijklmnop");
  });
});

describe("PreToolUse", () => {
  const bash = (command: string, session?: { session_id: string; prompt_id?: string }) =>
    ccInput(
      "PreToolUse",
      {
        tool_name: "Bash",
        tool_input: { command, description: "run" },
        tool_use_id: `toolu_${randomUUID()}`,
      },
      session,
    );

  it("no decision → {} and the call's correlation carries tool_use_id", async () => {
    const seen = await handler(HookName.PreToolUse, "observe-tool", () => null);
    const input = bash("ls");
    expect(await fx.post(input)).toEqual({ status: 200, body: {} });
    expect(seen[0]!.payload).toEqual({ tool_name: "Bash", arguments: { command: "ls", description: "run" } });
    expect(seen[0]!.correlation).toMatchObject({
      tool_call_id: input["tool_use_id"],
      run_id: input["session_id"],
    });
  });

  it("block → permissionDecision deny with the reason", async () => {
    await handler(HookName.PreToolUse, "no-rm", (e) =>
      String((e.payload["arguments"] as { command: string }).command).includes("rm -rf")
        ? { action: "block", reason: "no recursive deletes" }
        : null,
    );
    expect((await fx.post(bash("rm -rf /"))).body).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "no-rm: no recursive deletes",
      },
    });
    expect((await fx.post(bash("ls"))).body).toEqual({});
  });

  it("rewrite → updatedInput alone (no allow): keys the handler did not change keep their original values", async () => {
    await handler(HookName.PreToolUse, "timeout-wrap", (e) => {
      const args = e.payload["arguments"] as Record<string, unknown>;
      return {
        action: "rewrite",
        updates: { arguments: { ...args, command: `timeout 60 ${args["command"]}` } },
      };
    });
    const long = "x".repeat(5_000);
    const input = ccInput("PreToolUse", {
      tool_name: "Bash",
      tool_input: { command: "make test", description: long, token: "hunter2-not-for-handlers" },
      tool_use_id: "toolu_1",
    });
    const res = await fx.post(input);
    expect(res.body).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        updatedInput: {
          command: "timeout 60 make test",
          description: long,
          token: "hunter2-not-for-handlers",
        },
      },
    });
  });

  it("a rewrite to another tool is refused (Claude Code cannot swap the tool)", async () => {
    await handler(HookName.PreToolUse, "swap-tool", () => ({
      action: "rewrite",
      updates: { tool_name: "Read" },
    }));
    const session = { session_id: randomUUID() };
    const res = await fx.post(bash("cat x", session));
    expect(res.body).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
    await waitFor(async () =>
      (await sessionTimeline(session.session_id)).some((r) => r.kind === "tool.completed"),
    );
    const [done] = (await sessionTimeline(session.session_id)).filter((r) => r.kind === "tool.completed");
    expect(done!.payload).toMatchObject({ tool_name: "Bash", status: "blocked", executed: false });
    expect(done!.payload["reason"]).toMatch(/^rewritten by swap-tool \(the rewrite names another tool/);
  });

  it("request_permission → PermissionRequest handler's allow, with the rewrite kept", async () => {
    await handler(HookName.PreToolUse, "ask-net", () => ({
      action: "request_permission",
      reason: "network",
    }));
    const perm = await handler(HookName.PermissionRequest, "allow-curl", () => ({ action: "allow" }));
    const res = await fx.post(bash("curl example.org"));
    expect(res.body).toMatchObject({
      hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow" },
    });
    expect(perm[0]!.payload).toMatchObject({ tool_name: "Bash", safety_level: "mutation" });
    expect(String(perm[0]!.payload["detail"])).toContain("curl example.org");
  });

  it("request_permission → the human approvers: deny, allow, and ask when nobody answers", async () => {
    await handler(HookName.PreToolUse, "ask-all", () => ({ action: "request_permission" }));
    const nobody = await fx.post(bash("make deploy"));
    expect(nobody.body).toMatchObject({ hookSpecificOutput: { permissionDecision: "ask" } });

    let answer: "allow" | "deny" = "deny";
    const approver = serveApprovals(
      { nc: fx.env().nc, names: fx.env().names },
      () => ({ decision: answer, reason: "on call says" }),
      {
        approver: "alice",
      },
    );
    try {
      await fx.env().nc.flush();
      expect((await fx.post(bash("make deploy"))).body).toEqual({
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "deny",
          permissionDecisionReason: "approval denied by alice: on call says",
        },
      });
      answer = "allow";
      expect((await fx.post(bash("make deploy"))).body).toMatchObject({
        hookSpecificOutput: { permissionDecision: "allow" },
      });
    } finally {
      await approver.close();
    }
  });

  it("records tool_exec_started and tool.called once a call goes ahead, never for a denied one", async () => {
    await handler(HookName.PreToolUse, "deny-sudo", (e) =>
      String((e.payload["arguments"] as { command: string }).command).startsWith("sudo")
        ? { action: "block", reason: "no sudo" }
        : null,
    );
    const session = { session_id: randomUUID(), prompt_id: randomUUID() };
    const sudo = bash("sudo ls", session);
    await fx.post(sudo);
    const ls = bash("ls /opt/distinct-dir", session);
    await fx.post(ls);
    // No decision: Claude Code's own permission rules may still prompt and refuse, so nothing yet.
    await new Promise((r) => setTimeout(r, 300));
    const kinds = async () => (await sessionEvents(session.session_id)).map((e) => e.event);
    expect(await kinds()).not.toContain("tool_exec_started");
    // The agent reports the result: the call ran, so its start is recorded, before its end.
    const { hook_event_name: _e, ...rest } = ls;
    await fx.post({ ...rest, hook_event_name: "PostToolUse", tool_response: { stdout: "" } });
    await waitFor(async () => (await kinds()).includes("tool_exec_ended"));
    const events = await sessionEvents(session.session_id);
    const started = events.filter((e) => e.event === "tool_exec_started");
    expect(started).toHaveLength(1);
    expect(started[0]!.payload).toMatchObject({ tool_name: "Bash", effect: "mutation" });
    expect(started[0]!.correlation.tool_call_id).toBe(ls["tool_use_id"]);
    expect(JSON.stringify(started[0])).not.toContain("distinct-dir");
    const order = events.map((e) => e.event);
    expect(order.indexOf("tool_exec_started")).toBeLessThan(order.indexOf("tool_exec_ended"));
    const records = await sessionTimeline(session.session_id);
    expect(records.filter((r) => r.kind === "tool.called").map((r) => r.payload)).toEqual([
      expect.objectContaining({ tool_name: "Bash", target: "ls /opt/distinct-dir" }),
    ]);
    // The refused call never ran: its only record naming the tool says blocked, not executed, and why.
    const refused = records.filter(
      (r) => r.kind === "tool.completed" && r.correlation.tool_call_id === sudo["tool_use_id"],
    );
    expect(refused.map((r) => r.payload)).toEqual([
      {
        tool_name: "Bash",
        status: "blocked",
        has_error: false,
        executed: false,
        reason: "deny-sudo: no sudo",
        target: "sudo ls",
      },
    ]);
  });
});

describe("PermissionRequest", () => {
  const prompt = () =>
    ccInput("PermissionRequest", { tool_name: "Write", tool_input: { file_path: "/tmp/x", content: "y" } });

  it("allow / deny → decision.behavior", async () => {
    await handler(HookName.PermissionRequest, "policy", (e) =>
      String(e.payload["detail"]).includes("/tmp/x")
        ? { action: "deny", reason: "not there" }
        : { action: "allow" },
    );
    expect((await fx.post(prompt())).body).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: "policy: not there" },
      },
    });
    const other = ccInput("PermissionRequest", {
      tool_name: "Write",
      tool_input: { file_path: "/srv/y", content: "z" },
    });
    expect((await fx.post(other)).body).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } },
    });
  });

  it("ask or no decision → the approvers; nobody answering → {} (Claude Code asks its user)", async () => {
    await handler(HookName.PermissionRequest, "ask-human", () => ({ action: "ask" }));
    expect((await fx.post(prompt())).body).toEqual({});
    const seen: string[] = [];
    const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, (r) => {
      seen.push(r.detail);
      return "allow";
    });
    try {
      await fx.env().nc.flush();
      expect((await fx.post(prompt())).body).toEqual({
        hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } },
      });
      expect(seen[0]).toContain("/tmp/x");
    } finally {
      await approver.close();
    }
  });
});

describe("PostToolUse and PostToolUseFailure", () => {
  it("add_context → additionalContext in handler order; the result is the tool response", async () => {
    const seen = await handler(
      HookName.PostToolUse,
      "ctx-a",
      () => ({ action: "add_context", reason: "first note" }),
      {
        priority: 1,
      },
    );
    await handler(HookName.PostToolUse, "ctx-b", () => ({ action: "add_context", reason: "second note" }), {
      priority: 2,
    });
    const input = ccInput("PostToolUse", {
      tool_name: "Bash",
      tool_input: { command: "ls" },
      tool_response: { stdout: "a b", stderr: "" },
      tool_use_id: "toolu_9",
      duration_ms: 12,
    });
    expect((await fx.post(input)).body).toEqual({
      hookSpecificOutput: { hookEventName: "PostToolUse", additionalContext: "first note\n\nsecond note" },
    });
    expect(seen[0]!.payload).toEqual({
      tool_name: "Bash",
      arguments: { command: "ls" },
      result: { stdout: "a b", stderr: "" },
      has_error: false,
      executed: true,
    });
  });

  it("block → decision block; a failure is has_error with the error as result", async () => {
    const seen = await handler(HookName.PostToolUse, "leak-check", (e) =>
      e.payload["has_error"] ? { action: "block", reason: "the tool failed loudly" } : null,
    );
    const input = ccInput("PostToolUseFailure", {
      tool_name: "Bash",
      tool_input: { command: "exit 3" },
      tool_use_id: "toolu_10",
      error: "Exit code 3",
      is_interrupt: false,
    });
    expect((await fx.post(input)).body).toEqual({
      decision: "block",
      reason: "leak-check: the tool failed loudly",
    });
    expect(seen[0]!.payload).toMatchObject({
      has_error: true,
      executed: true,
      result: { error: "Exit code 3" },
    });
    const sid = input["session_id"] as string;
    await waitFor(async () => (await sessionEvents(sid)).some((e) => e.event === "tool_exec_failed"));
    const names = (await sessionEvents(sid)).map((e) => e.event);
    expect(names).toEqual(expect.arrayContaining(["tool_exec_ended", "tool_exec_failed"]));
  });

  it("a non-object tool response is wrapped", async () => {
    const seen = await handler(HookName.PostToolUse, "observe-post", () => null);
    await fx.post(
      ccInput("PostToolUse", { tool_name: "Read", tool_input: { file_path: "a" }, tool_response: "text" }),
    );
    expect(seen[0]!.payload["result"]).toEqual({ value: "text" });
  });
});

describe("Stop through the verifier", () => {
  const stop = (session: { session_id: string; prompt_id: string }, text: string, active = false) =>
    ccInput("Stop", { stop_hook_active: active, last_assistant_message: text }, session);

  it("accept → {}", async () => {
    const seen = await handler(HookName.PostVerify, "observe-verify", () => null);
    const session = { session_id: randomUUID(), prompt_id: randomUUID() };
    expect((await fx.post(stop(session, "All done."))).body).toEqual({});
    expect(seen[0]!.payload).toMatchObject({ candidate_summary: "All done.", termination_reason: "natural" });
    expect(seen[0]!.correlation).toMatchObject({ turn_id: session.prompt_id, verify_attempt: 0 });
  });

  it("revise → block with the instruction, twice; the budget then ends the loop with continue: false", async () => {
    await handler(HookName.PostVerify, "never-happy", () => ({
      action: "revise",
      instruction: "Add the test results.",
    }));
    const session = { session_id: randomUUID(), prompt_id: randomUUID() };
    expect((await fx.post(stop(session, "Done."))).body).toEqual({
      decision: "block",
      reason: "Add the test results.",
    });
    expect((await fx.post(stop(session, "Done.", true))).body).toEqual({
      decision: "block",
      reason: "Add the test results.",
    });
    const third = await fx.post(stop(session, "Done.", true));
    expect(third.body).toMatchObject({
      continue: false,
      stopReason: expect.stringMatching(/escalate budget exhausted/),
    });
    // A parked turn stays parked: Claude Code is told to stop again.
    expect((await fx.post(stop(session, "Done.", true))).body).toMatchObject({ continue: false });
    // A new prompt is a new root turn with its own budget.
    const next = { ...session, prompt_id: randomUUID() };
    expect((await fx.post(stop(next, "Done."))).body).toMatchObject({ decision: "block" });
  });

  it("a Stop handler's continue → block with its instruction", async () => {
    await handler(HookName.Stop, "keep-going", (e) =>
      e.correlation.verify_attempt === 0 ? { action: "continue", instruction: "Run the linter too." } : null,
    );
    const session = { session_id: randomUUID(), prompt_id: randomUUID() };
    expect((await fx.post(stop(session, "Done."))).body).toEqual({
      decision: "block",
      reason: "Run the linter too.",
    });
    expect((await fx.post(stop(session, "Done, linted.", true))).body).toEqual({});
  });
});

describe("session, sub-agent and compaction events", () => {
  it("SessionStart and SessionEnd: the session's record, the hooks, the timeline, the run", async () => {
    const starts = await handler(HookName.SessionStart, "observe-start", () => null);
    const ends = await handler(HookName.SessionEnd, "observe-end", () => null);
    const session = { session_id: randomUUID() };
    expect(
      (await fx.post(ccInput("SessionStart", { source: "startup", model: "claude-x" }, session))).body,
    ).toEqual({});
    expect(
      (await fx.post(ccInput("UserPromptSubmit", { prompt: "hi" }, { ...session, prompt_id: "p1" }))).body,
    ).toEqual({});
    expect((await fx.post(ccInput("SessionEnd", { reason: "prompt_input_exit" }, session))).body).toEqual({});
    expect(starts.map((e) => e.payload)).toEqual([
      { model: "claude-x", provider: "anthropic", resumed: false, status: "active" },
    ]);
    expect(ends.map((e) => e.payload)).toEqual([{ reason: "prompt_input_exit", status: "completed" }]);
    await waitFor(async () => (await sessionTimeline(session.session_id)).length >= 2);
    expect((await sessionTimeline(session.session_id)).map((r) => r.kind)).toEqual([
      "session.started",
      "session.ended",
    ]);
    // Resuming the session starts a new generation.
    await fx.post(ccInput("SessionStart", { source: "resume" }, session));
    expect(starts[1]).toMatchObject({ payload: { resumed: true }, correlation: { session_generation: 1 } });
  });

  it("a session's first event starts it when SessionStart never came (headless Claude Code)", async () => {
    const starts = await handler(HookName.SessionStart, "observe-lazy", () => null);
    const session = { session_id: randomUUID(), prompt_id: randomUUID() };
    await Promise.all([
      fx.post(ccInput("UserPromptSubmit", { prompt: "a" }, session)),
      fx.post(ccInput("Notification", { message: "m", notification_type: "idle" }, session)),
    ]);
    expect(starts).toHaveLength(1);
    expect(starts[0]!.payload).toMatchObject({ resumed: false, provider: "anthropic" });
  });

  it("SubagentStart / SubagentStop / PreCompact / PostCompact map to their hooks", async () => {
    const sub = await handler(HookName.SubagentStart, "observe-sub", () => null);
    const subStop = await handler(HookName.SubagentStop, "observe-sub-stop", () => null);
    const post = await handler(HookName.PostCompact, "observe-compact", () => null);
    await handler(HookName.PreCompact, "no-compaction", () => ({ action: "defer", reason: "not now" }));
    const session = { session_id: randomUUID(), prompt_id: randomUUID() };
    expect(
      (await fx.post(ccInput("SubagentStart", { agent_id: "a-1", agent_type: "Explore" }, session))).body,
    ).toEqual({});
    expect(
      (
        await fx.post(
          ccInput(
            "SubagentStop",
            { agent_id: "a-1", agent_type: "Explore", stop_hook_active: false, agent_transcript_path: "/x" },
            session,
          ),
        )
      ).body,
    ).toEqual({});
    expect(sub[0]!.payload).toEqual({
      task_id: "a-1",
      task_type: "Explore",
      description: "",
      child_session_key: "a-1",
      parent_session_key: session.session_id,
    });
    expect(subStop[0]!.payload).toMatchObject({ task_id: "a-1", success: true, status: "completed" });
    expect(
      (await fx.post(ccInput("PreCompact", { trigger: "auto", custom_instructions: null }, session))).body,
    ).toEqual({
      decision: "block",
      reason: "no-compaction: not now",
    });
    expect(
      (await fx.post(ccInput("PostCompact", { trigger: "auto", compact_summary: "secret summary" }, session)))
        .body,
    ).toEqual({});
    expect(post[0]!.payload).toMatchObject({ trigger: "auto", persisted: true });
    expect(JSON.stringify(post[0])).not.toContain("secret summary");
    await waitFor(async () =>
      (await sessionTimeline(session.session_id)).some((r) => r.kind === "subagent.stopped"),
    );
  });

  it("events with no hook are recorded as runtime events only", async () => {
    const session = { session_id: randomUUID(), prompt_id: randomUUID() };
    expect(
      (
        await fx.post(
          ccInput("Notification", { message: "waiting", notification_type: "idle_prompt" }, session),
        )
      ).body,
    ).toEqual({});
    expect((await fx.post(ccInput("SomeFutureEvent", { whatever: 1 }, session))).body).toEqual({});
    await waitFor(
      async () =>
        (await sessionEvents(session.session_id)).filter((e) => e.event === "adapter_dispatch_attempt")
          .length === 2,
    );
    const recorded = (await sessionEvents(session.session_id)).filter(
      (e) => e.event === "adapter_dispatch_attempt",
    );
    expect(recorded.map((e) => e.payload["hook_event_name"])).toEqual(["Notification", "SomeFutureEvent"]);
  });
});

describe("fail-closed", () => {
  it("a closed guard that cannot be reached denies or blocks with a 200", async () => {
    for (const hook of [HookName.PreToolUse, HookName.PermissionRequest, HookName.UserPromptSubmit])
      await fx.scope().register({ hook, name: `dead-${hook}`, failure_mode: "closed", timeout_ms: 200 });
    const tool = await fx.post(
      ccInput("PreToolUse", { tool_name: "Bash", tool_input: { command: "ls" }, tool_use_id: "t" }),
    );
    expect(tool).toMatchObject({
      status: 200,
      body: {
        hookSpecificOutput: {
          permissionDecision: "deny",
          permissionDecisionReason: expect.stringMatching(/failure_mode closed/),
        },
      },
    });
    const perm = await fx.post(
      ccInput("PermissionRequest", { tool_name: "Bash", tool_input: { command: "ls" } }),
    );
    expect(perm).toMatchObject({
      status: 200,
      body: { hookSpecificOutput: { decision: { behavior: "deny" } } },
    });
    const prompt = await fx.post(ccInput("UserPromptSubmit", { prompt: "hi" }));
    expect(prompt).toMatchObject({
      status: 200,
      body: { decision: "block", reason: expect.stringMatching(/failure_mode closed/) },
    });
  });
});

describe("a call's records", () => {
  it("go out after its answer, ahead of the gateway's next request to the plane, and all by stop", async () => {
    await handler(HookName.PostToolUse, "observe-order", () => null);
    const { nc, names } = fx.env();
    // Records held for a minute unless something sends them sooner.
    const gateway = await startAgentGateway({
      nc,
      names,
      config: { host: "127.0.0.1", port: 0, eventDelayMs: 60_000 },
    });
    const post = async (body: unknown) =>
      (
        await fetch(`${gateway.url}${CLAUDE_CODE_HOOK_PATH}`, {
          method: "POST",
          headers: { authorization: `Bearer ${fx.token()}` },
          body: JSON.stringify(body),
        })
      ).json();
    const session = { session_id: randomUUID(), prompt_id: randomUUID() };
    const tool = { tool_name: "Bash", tool_input: { command: "ls" }, tool_use_id: "toolu_order" };
    const kinds = async () => (await sessionEvents(session.session_id)).map((e) => e.event);
    let stopped = false;
    try {
      await waitFor(() => gateway.agents() >= 1);
      expect(await post(ccInput("PreToolUse", tool, session))).toEqual({});
      await new Promise((r) => setTimeout(r, 200));
      // Answered, and tool_exec_started still waits (the session's start went out ahead of PreToolUse).
      expect(await kinds()).toEqual(["session_started"]);
      expect(await post(ccInput("PostToolUse", { ...tool, tool_response: { stdout: "" } }, session))).toEqual(
        {},
      );
      await waitFor(async () => (await kinds()).includes("extension_invoked"));
      // Both tool events reached the stream before the PostToolUse handler ran.
      expect(await kinds()).toEqual([
        "session_started",
        "tool_exec_started",
        "tool_exec_ended",
        "extension_invoked",
      ]);
      // tool.completed comes after the PostToolUse answer: it waits for the gateway's stop.
      expect((await sessionTimeline(session.session_id)).map((r) => r.kind)).toEqual([
        "session.started",
        "tool.called",
      ]);
      await gateway.stop();
      stopped = true;
      expect((await sessionTimeline(session.session_id)).map((r) => r.kind)).toEqual([
        "session.started",
        "tool.called",
        "tool.completed",
      ]);
    } finally {
      if (!stopped) await gateway.stop();
    }
  });
});

describe("when the plane cannot be reached", () => {
  it("guarded events are refused with a 200, the others answer {}", async () => {
    await withUndecidedPlane(fx.env(), CLAUDE_CODE_HOOK_PATH, async (post) => {
      const tool = await post(ccInput("PreToolUse", { tool_name: "Bash", tool_input: { command: "ls" } }));
      expect(tool).toMatchObject({
        status: 200,
        body: {
          hookSpecificOutput: {
            permissionDecision: "deny",
            permissionDecisionReason: expect.stringMatching(/could not decide/),
          },
        },
      });
      expect((await post(ccInput("UserPromptSubmit", { prompt: "hi" }))).body).toMatchObject({
        decision: "block",
      });
      expect(
        (await post(ccInput("PermissionRequest", { tool_name: "Bash", tool_input: {} }))).body,
      ).toMatchObject({
        hookSpecificOutput: { decision: { behavior: "deny" } },
      });
      expect(
        await post(ccInput("PostToolUse", { tool_name: "Bash", tool_input: {}, tool_response: {} })),
      ).toEqual({
        status: 200,
        body: {},
      });
      expect(await post(ccInput("Stop", { last_assistant_message: "done" }))).toEqual({
        status: 200,
        body: {},
      });
    });
  });
});
