/**
 * The demo's agent runtime: one scripted root turn that passes every public hook and every
 * middleware join point through the real services. `geode demo` runs it as its own process, like
 * the example handlers, and reads its result from the last line of its stdout; a test runs
 * `runDemoSession` in-process on a secured NATS, as the `runtime` user.
 */
import { randomUUID } from "node:crypto";
import { MiddlewareRegistry } from "@geode/middleware";
import {
  type Correlation,
  callLlm,
  connectGeode,
  createCompactor,
  createHookClient,
  createRuns,
  createSessions,
  createSubagents,
  createToolClient,
  createVerifyClient,
  followUpContext,
  type GeodeConnection,
  type HookClient,
  type HookName,
  type LlmAdapter,
  RuntimeEventBus,
  type Sessions,
  type ToolClient,
  type ToolExecuteReply,
  type VerifyReply,
} from "@geode/runtime";

/** One line of the demo's story, for people. */
export interface DemoStep {
  what: string;
  outcome: string;
}

export interface DemoSessionResult {
  runId: string;
  sessionId: string;
  steps: DemoStep[];
  /** The first and the retried mutation call. */
  write: ToolExecuteReply;
  retry: ToolExecuteReply;
  blocked: ToolExecuteReply;
  read: ToolExecuteReply;
  verifications: VerifyReply[];
  /** The session's end: made durable once, then SessionEnd (`hookError` when it could not run). */
  ended: { ended: boolean; hookError: string | null };
  /** Times the fake LLM was called. */
  llmCalls: number;
  /** Hooks the runtime invoked itself (the services invoke the rest). */
  invokedByRuntime: HookName[];
}

/**
 * A deterministic fake LLM: plans the tool calls, drafts an answer without a summary, and adds
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

const SYSTEM = "You write release notes.";

/** What every step of the session uses. */
interface Turn {
  conn: GeodeConnection;
  events: RuntimeEventBus;
  hooks: HookClient;
  sessions: Sessions;
  tools: ToolClient;
  llm: ReturnType<typeof fakeLlm>;
  /** Trusted LLM middleware, in the runtime's own process. */
  registry: MiddlewareRegistry;
  runId: string;
  sessionId: string;
  /** Set once the session started. */
  corr: Correlation;
  step(what: string, outcome: string): void;
}

function llmMiddleware(): MiddlewareRegistry {
  const registry = new MiddlewareRegistry();
  registry.registerLlmRequest({ name: "tag-request", priority: 10 }, (request) => ({
    ...request,
    metadata: { ...(request.metadata ?? {}), app: "release-notes" },
  }));
  registry.registerLlmExecution({ name: "retry-budget", priority: 10 }, async (_request, next) => next());
  return registry;
}

function callModel(t: Turn, system: string, messages: unknown[], llmCallId: string) {
  return callLlm(
    t.llm.adapter,
    { model: "fake-1", provider: "fake", system, messages },
    { ...t.corr, llm_call_id: llmCallId },
    { registry: t.registry, events: t.events },
  );
}

/** SessionStart, once the session is durable; the run's rows are mirrored to events.jsonl. */
async function startSession(t: Turn): Promise<void> {
  await createRuns(t.conn).open(t.runId);
  t.step("run projection", `${t.runId} opened (rows mirrored to events.jsonl)`);
  const turn: Partial<Correlation> = { run_id: t.runId, turn_id: "turn-1" };
  const started = await t.sessions.start({
    session_id: t.sessionId,
    model: "fake-1",
    provider: "fake",
    correlation: turn,
  });
  t.corr = { ...started.correlation, ...turn };
  t.step("SessionStart", `session ${t.sessionId} is durable, generation ${started.record.generation}`);
}

/** UserPromptSubmit masks the secret and rewrites the e-mail address before the model sees it. */
async function submitPrompt(t: Turn): Promise<string> {
  const prompt =
    "Draft the 1.4 release notes. Mail them to dev@example.com. My key is sk-demo-0123456789abcdefghij.";
  void t.events.emit("user_input_received", { chars: prompt.length }, t.corr);
  const submitted = await t.hooks.invoke("UserPromptSubmit", { user_input: prompt }, t.corr);
  t.step(
    "UserPromptSubmit",
    submitted.blocked
      ? "blocked"
      : `secret masked, ${submitted.decisions.map((d) => `${d.handler} ${d.action}`).join(", ")}`,
  );
  return String(submitted.payload["user_input"]);
}

/** The planned tool calls: an approved write, its replay, a blocked shell call, a read. */
async function runTools(t: Turn) {
  const writeCall = {
    tool_name: "fs.write",
    arguments: { path: "./notes/release-1.4.md", content: "- faster hooks\n- durable receipts\n" },
    correlation: { ...t.corr, tool_call_id: "call-write" },
    operation_key: `${t.sessionId}.write-release-notes`,
  };
  const write = await t.tools.execute(writeCall);
  t.step("fs.write (mutation, needs approval)", `${write.status}, receipt ${write.receipt?.state ?? "-"}`);
  const retry = await t.tools.execute({
    ...writeCall,
    correlation: { ...t.corr, tool_call_id: "call-write-retry" },
  });
  t.step(
    "fs.write retried with the same operation key",
    `${retry.status} from its receipt, executed=${retry.executed}`,
  );
  const blocked = await t.tools.execute({
    tool_name: "shell.exec",
    arguments: { command: "rm -rf /" },
    correlation: { ...t.corr, tool_call_id: "call-shell" },
  });
  if (blocked.executed) throw new Error("the policy guard let shell.exec run");
  t.step("shell.exec", `${blocked.status}: ${blocked.reason}`);
  const read = await t.tools.execute({
    tool_name: "fs.read",
    arguments: { path: "notes/release-1.4.md" },
    correlation: { ...t.corr, tool_call_id: "call-read" },
  });
  t.step("fs.read", `${read.status}, context added: ${read.additional_context.join("; ") || "none"}`);
  return { write, retry, blocked, read };
}

/** PreCompact, the compaction stored, then PostCompact; a sub-agent's start and stop. */
async function compactAndDelegate(t: Turn): Promise<void> {
  const compacted = await createCompactor(t.conn, { events: t.events, hooks: t.hooks }).run(
    {
      model: "fake-1",
      provider: "fake",
      message_count: 24,
      keep_recent: 6,
      trigger: "auto",
      hard: false,
      correlation: t.corr,
    },
    {
      compact: async (plan) => ({
        state: { kept: plan.keep_recent },
        new_message_count: plan.keep_recent + 1,
      }),
      store: async () => undefined,
    },
  );
  t.step(
    "compaction",
    compacted.status === "compacted"
      ? `24 → ${compacted.new_message_count} messages, stored, then PostCompact`
      : "deferred",
  );
  const child = await createSubagents(t.conn, { events: t.events, hooks: t.hooks }).start({
    task_id: "task-changelog",
    task_type: "research",
    description: "collect merged changes since 1.3",
    parent_session_id: t.sessionId,
    correlation: t.corr,
  });
  const stopped = await child.stop({ success: true });
  t.step(
    "sub-agent",
    `${child.child_session_id} started and stopped (${stopped.stopped ? "completed" : "already stopped"})`,
  );
}

/** The answer through the verifier: revised once with the follow-up instruction, then accepted. */
async function verifyAnswer(t: Turn, messages: unknown[]): Promise<VerifyReply[]> {
  const verifier = createVerifyClient(t.conn);
  const verifications: VerifyReply[] = [];
  let answer = await callModel(
    t,
    SYSTEM,
    [...messages, { role: "assistant", content: "tools done" }],
    "llm-2",
  );
  for (let attempt = 0; attempt < 3; attempt++) {
    const reply = await verifier.finalize({
      correlation: t.corr,
      candidate: {
        text: String(answer["text"] ?? ""),
        termination_reason: "natural",
        rounds: 1,
        tool_call_count: attempt === 0 ? 3 : 0,
        usage: answer["usage"] as { input_tokens: number; output_tokens: number },
      },
    });
    verifications.push(reply);
    const said = reply.follow_up_instruction ? ` — "${reply.follow_up_instruction}"` : "";
    t.step(`verification attempt ${reply.verify_attempt}`, `${reply.policy_action}${said}`);
    if (reply.policy_action !== "revise" && reply.policy_action !== "continue") break;
    const followUp = followUpContext(reply);
    answer = await callModel(t, `${SYSTEM}\n\n${followUp?.content ?? ""}`, messages, `llm-${3 + attempt}`);
  }
  return verifications;
}

/** The durable end, then SessionEnd; the verifier clears the session's state on its own. */
async function endSession(t: Turn, verifications: VerifyReply[]): Promise<DemoSessionResult["ended"]> {
  const ended = await t.sessions.end(t.sessionId, {
    reason: "answer delivered",
    status: "completed",
    correlation: t.corr,
  });
  t.step("SessionEnd", ended.ended ? "terminal state durable, then SessionEnd" : "already ended");
  void t.events.emit("turn_completed", { rounds: verifications.length, tool_calls: 4 }, t.corr);
  await t.events.flush();
  await createRuns(t.conn).close(t.runId);
  return { ended: ended.ended, hookError: ended.hookError?.message ?? null };
}

/** The scripted session, step by step (see the module comment). */
export async function runDemoSession(
  conn: GeodeConnection,
  events: RuntimeEventBus,
  progress: (text: string) => void,
): Promise<DemoSessionResult> {
  const steps: DemoStep[] = [];
  const hooks = createHookClient(conn, conn.names);
  const t: Turn = {
    conn,
    events,
    hooks,
    sessions: createSessions(conn, { events, hooks }),
    tools: createToolClient(conn),
    llm: fakeLlm(),
    registry: llmMiddleware(),
    runId: `demo-${Date.now().toString(36)}`,
    sessionId: `session-${randomUUID().slice(0, 8)}`,
    corr: undefined as unknown as Correlation,
    step(what, outcome) {
      steps.push({ what, outcome });
      progress(`${what}: ${outcome}`);
    },
  };
  await startSession(t);
  const messages: unknown[] = [{ role: "user", content: await submitPrompt(t) }];
  const plan = await callModel(t, SYSTEM, messages, "llm-1");
  t.step("LLM call 1", `plans tools: ${(plan["tool_calls"] as string[]).join(", ")}`);
  const calls = await runTools(t);
  await compactAndDelegate(t);
  const verifications = await verifyAnswer(t, messages);
  const ended = await endSession(t, verifications);
  return {
    runId: t.runId,
    sessionId: t.sessionId,
    steps,
    ...calls,
    verifications,
    ended,
    llmCalls: t.llm.calls(),
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
}

/** Marks the line of stdout that carries the session's result for `geode demo`. */
export const RESULT_PREFIX = "demo-result ";

// Run as a process (`geode demo` starts it): NATS_URL, GEODE_NAMESPACE and credentials from the environment.
if (process.argv[1] === import.meta.filename) {
  const conn = await connectGeode({ name: "demo-runtime" });
  try {
    const events = await RuntimeEventBus.create({ nc: conn, names: conn.names, source: "runtime" });
    const result = await runDemoSession(conn, events, (line) => process.stderr.write(`${line}\n`));
    process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
  } finally {
    await conn.close();
  }
}
