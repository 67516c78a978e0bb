import { randomUUID } from "node:crypto";
import type { RuntimeEventBus } from "@geode/bus";
import type { Correlation, HookName, ToolExecuteReply, VerifyReply } from "@geode/contracts";
import { MiddlewareRegistry } from "@geode/middleware";
import {
  callLlm,
  createCompactor,
  createHookClient,
  createRuns,
  createSessions,
  createSubagents,
  createToolClient,
  createVerifyClient,
  followUpContext,
  type LlmAdapter,
} from "@geode/runtime";
import { type GeodeConnection, serveTool } from "@geode/sdk";

/** One line of the demo's story, for people. */
export interface DemoStep {
  what: string;
  outcome: string;
}

export interface DemoSessionResult {
  runId: string;
  sessionId: string;
  steps: DemoStep[];
  /** Status of the first and the retried mutation call. */
  write: ToolExecuteReply;
  retry: ToolExecuteReply;
  blocked: ToolExecuteReply;
  read: ToolExecuteReply;
  verifications: VerifyReply[];
  /** Times the fake LLM was called. */
  llmCalls: number;
  /** Hooks the runtime invoked itself (the services invoke the rest). */
  invokedByRuntime: HookName[];
}

/**
 * A deterministic fake LLM: plans two tool calls, drafts an answer without a summary, and adds
 * the summary once the verifier's follow-up instruction is in its system context.
 */
export function fakeLlm(): { adapter: LlmAdapter; calls: () => number } {
  let calls = 0;
  const adapter: LlmAdapter = async (request) => {
    calls++;
    const system = String(request.system ?? "");
    const usage = { input_tokens: 120 + request.messages.length * 10, output_tokens: 40 };
    if (calls === 1) {
      return { stop_reason: "tool_use", tool_calls: ["fs.write", "shell.exec", "fs.read"], usage };
    }
    if (!system.includes("[verification follow-up]")) {
      return {
        stop_reason: "end_turn",
        text: "Release notes for 1.4:\n- faster hooks\n- durable receipts",
        usage,
      };
    }
    return {
      stop_reason: "end_turn",
      text: "## Summary\nVersion 1.4 makes hooks faster and tool side effects durable.\n\nRelease notes for 1.4:\n- faster hooks\n- durable receipts",
      usage,
    };
  };
  return { adapter, calls: () => calls };
}

/**
 * The scripted agent session: one root turn that passes every public hook and every middleware
 * join point through the real services.
 */
export async function runDemoSession(
  conn: GeodeConnection,
  events: RuntimeEventBus,
  progress: (text: string) => void,
): Promise<DemoSessionResult> {
  const runId = `demo-${Date.now().toString(36)}`;
  const sessionId = `session-${randomUUID().slice(0, 8)}`;
  const steps: DemoStep[] = [];
  const step = (what: string, outcome: string) => {
    steps.push({ what, outcome });
    progress(`${what}: ${outcome}`);
  };
  const hooks = createHookClient(conn.nc, conn.names);
  const runs = createRuns(conn);
  const sessions = createSessions(conn, { events, hooks });
  const tools = createToolClient(conn);
  const verifier = createVerifyClient(conn);
  const llm = fakeLlm();

  // Trusted LLM middleware lives in the runtime's own process.
  const registry = new MiddlewareRegistry();
  registry.registerLlmRequest({ name: "tag-request", priority: 10 }, (request) => ({
    ...request,
    metadata: { ...(request.metadata ?? {}), app: "release-notes" },
  }));
  registry.registerLlmExecution({ name: "retry-budget", priority: 10 }, async (_request, next) => next());

  // A remote tool the policy guard must stop before it runs.
  let shellCalls = 0;
  const shell = await serveTool(
    conn,
    {
      name: "shell.exec",
      description: "Runs a shell command (the demo's dangerous tool).",
      input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
      effect: "admin",
      requires_approval: true,
    },
    () => {
      shellCalls++;
      return { result: { ran: true } };
    },
  );

  try {
    await runs.open(runId);
    step("run projection", `${runId} opened (rows mirrored to events.jsonl)`);
    const turn: Partial<Correlation> = { run_id: runId, turn_id: "turn-1" };
    const started = await sessions.start({
      session_id: sessionId,
      model: "fake-1",
      provider: "fake",
      correlation: turn,
    });
    const corr: Correlation = { ...started.correlation, ...turn };
    step("SessionStart", `session ${sessionId} is durable, generation ${started.record.generation}`);

    const prompt =
      "Draft the 1.4 release notes. Mail them to dev@example.com. My key is sk-demo-0123456789abcdefghij.";
    void events.emit("user_input_received", { chars: prompt.length }, corr);
    const submitted = await hooks.invoke("UserPromptSubmit", { user_input: prompt }, corr);
    const userInput = String(submitted.payload["user_input"]);
    step(
      "UserPromptSubmit",
      submitted.blocked
        ? "blocked"
        : `secret masked, ${submitted.decisions.map((d) => `${d.handler} ${d.action}`).join(", ")}`,
    );

    const system = "You write release notes.";
    const messages: unknown[] = [{ role: "user", content: userInput }];
    const first = await callLlm(
      llm.adapter,
      { model: "fake-1", provider: "fake", system, messages },
      { ...corr, llm_call_id: "llm-1" },
      { registry, events },
    );
    step("LLM call 1", `plans tools: ${(first["tool_calls"] as string[]).join(", ")}`);

    const writeCall = {
      tool_name: "fs.write",
      arguments: { path: "./notes/release-1.4.md", content: "- faster hooks\n- durable receipts\n" },
      correlation: { ...corr, tool_call_id: "call-write" },
      operation_key: `${sessionId}.write-release-notes`,
    };
    const write = await tools.execute(writeCall);
    step("fs.write (mutation, needs approval)", `${write.status}, receipt ${write.receipt?.state ?? "-"}`);
    const retry = await tools.execute({
      ...writeCall,
      correlation: { ...corr, tool_call_id: "call-write-retry" },
    });
    step(
      "fs.write retried with the same operation key",
      `${retry.status} from its receipt, executed=${retry.executed}`,
    );

    const blocked = await tools.execute({
      tool_name: "shell.exec",
      arguments: { command: "rm -rf /" },
      correlation: { ...corr, tool_call_id: "call-shell" },
    });
    step("shell.exec", `${blocked.status}: ${blocked.reason}`);

    const read = await tools.execute({
      tool_name: "fs.read",
      arguments: { path: "notes/release-1.4.md" },
      correlation: { ...corr, tool_call_id: "call-read" },
    });
    step("fs.read", `${read.status}, context added: ${read.additional_context.join("; ") || "none"}`);

    const compactor = createCompactor(conn, { events, hooks });
    const compacted = await compactor.run(
      {
        model: "fake-1",
        provider: "fake",
        message_count: 24,
        keep_recent: 6,
        trigger: "auto",
        hard: false,
        correlation: corr,
      },
      {
        compact: async (plan) => ({
          state: { kept: plan.keep_recent },
          new_message_count: plan.keep_recent + 1,
        }),
        store: async () => undefined,
      },
    );
    step(
      "compaction",
      compacted.status === "compacted"
        ? `24 → ${compacted.new_message_count} messages, stored, then PostCompact`
        : "deferred",
    );

    const subagents = createSubagents(conn, { events, hooks });
    const child = await subagents.start({
      task_id: "task-changelog",
      task_type: "research",
      description: "collect merged changes since 1.3",
      parent_session_id: sessionId,
      correlation: corr,
    });
    const stopped = await child.stop({ success: true });
    step(
      "sub-agent",
      `${child.child_session_id} started and stopped (${stopped.stopped ? "completed" : "already stopped"})`,
    );

    const verifications: VerifyReply[] = [];
    let answer = await callLlm(
      llm.adapter,
      {
        model: "fake-1",
        provider: "fake",
        system,
        messages: [...messages, { role: "assistant", content: "tools done" }],
      },
      { ...corr, llm_call_id: "llm-2" },
      { registry, events },
    );
    for (let attempt = 0; attempt < 3; attempt++) {
      const reply = await verifier.finalize({
        correlation: corr,
        candidate: {
          text: String(answer["text"] ?? ""),
          termination_reason: "natural",
          rounds: 1,
          tool_call_count: attempt === 0 ? 3 : 0,
          usage: answer["usage"] as { input_tokens: number; output_tokens: number },
        },
      });
      verifications.push(reply);
      step(
        `verification attempt ${reply.verify_attempt}`,
        `${reply.policy_action}${reply.follow_up_instruction ? ` — "${reply.follow_up_instruction}"` : ""}`,
      );
      if (reply.policy_action !== "revise" && reply.policy_action !== "continue") break;
      const followUp = followUpContext(reply);
      answer = await callLlm(
        llm.adapter,
        { model: "fake-1", provider: "fake", system: `${system}\n\n${followUp?.content ?? ""}`, messages },
        { ...corr, llm_call_id: `llm-${3 + attempt}` },
        { registry, events },
      );
    }

    const ended = await sessions.end(sessionId, {
      reason: "answer delivered",
      status: "completed",
      correlation: corr,
    });
    step("SessionEnd", ended.ended ? "terminal state durable, then SessionEnd" : "already ended");
    void events.emit("turn_completed", { rounds: verifications.length, tool_calls: 4 }, corr);
    await events.flush();
    await runs.close(runId);
    if (shellCalls > 0) throw new Error("the policy guard let shell.exec run");
    return {
      runId,
      sessionId,
      steps,
      write,
      retry,
      blocked,
      read,
      verifications,
      llmCalls: llm.calls(),
      invokedByRuntime: [
        "SessionStart",
        "UserPromptSubmit",
        "PreCompact",
        "PostCompact",
        "SubagentStart",
        "SubagentStop",
        "SessionEnd",
      ],
    };
  } finally {
    await shell.close();
  }
}
