import { type ClaudeCodeHookOutput, decisionReason, HookName, RuntimeEvent } from "@geode/contracts";
import { PROVIDER } from "../session-tracker.js";
import { type EventContext, field } from "./event-context.js";
import { block, NOTHING } from "./outputs.js";

/** SessionStart → the session is created (or resumed: a new generation), then SessionStart runs. */
export async function sessionStartEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  await ctx.sessions.start(
    ctx.corr,
    { source: field(ctx.input, "source"), model: field(ctx.input, "model") },
    ctx.signal,
  );
  return NOTHING;
}

/** SessionEnd → the session is completed, then SessionEnd runs and the run is closed. */
export async function sessionEndEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  await ctx.sessions.end(ctx.corr, field(ctx.input, "reason") ?? "other", ctx.signal);
  return NOTHING;
}

/** SubagentStart → SubagentStart (task = Claude Code's agent id). */
export async function subagentStartEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  const { plane, corr, signal, input } = ctx;
  const agentId = field(input, "agent_id") as string;
  const taskType = field(input, "agent_type") ?? "";
  await plane.invokeHook(
    HookName.SubagentStart,
    {
      task_id: agentId,
      task_type: taskType,
      description: "",
      child_session_key: agentId,
      parent_session_key: corr.session_id,
    },
    corr,
    { signal },
  );
  const facts = { task_id: agentId, task_type: taskType, child_session_key: agentId };
  plane.emit(RuntimeEvent.SUBAGENT_STARTED, facts, corr);
  plane.timeline("subagent.started", facts, corr);
  return NOTHING;
}

/** SubagentStop → SubagentStop (Claude Code reports neither duration nor failure: 0 and success). */
export async function subagentStopEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  const { plane, corr, signal, input } = ctx;
  const agentId = field(input, "agent_id") as string;
  const taskType = field(input, "agent_type") ?? "";
  await plane.invokeHook(
    HookName.SubagentStop,
    {
      task_id: agentId,
      task_type: taskType,
      success: true,
      status: "completed",
      duration_ms: 0,
      error: "",
      child_session_key: agentId,
    },
    corr,
    { signal },
  );
  const facts = { task_id: agentId, task_type: taskType, status: "completed", success: true };
  plane.emit(RuntimeEvent.SUBAGENT_COMPLETED, facts, corr);
  plane.timeline("subagent.stopped", facts, corr);
  return NOTHING;
}

/**
 * PreCompact → PreCompact (Claude Code reports no message counts: 0): defer → `{"decision":
 * "block", "reason"}` (Claude Code skips this compaction). Claude Code has no way to take changed
 * compaction parameters, so a rewrite is recorded and compaction goes on as it planned.
 */
export async function preCompactEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  const trigger = field(ctx.input, "trigger") ?? "auto";
  const outcome = await ctx.plane.invokeHook(
    HookName.PreCompact,
    { model: "", provider: PROVIDER, message_count: 0, keep_recent: 0, trigger, hard: false },
    ctx.corr,
    { signal: ctx.signal },
  );
  if (outcome.decisions.some((d) => d.action === "defer"))
    return block(decisionReason(outcome, ["defer"], "compaction deferred"));
  return NOTHING;
}

/** PostCompact → PostCompact (the summary itself is never forwarded). */
export async function postCompactEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  await ctx.plane.invokeHook(
    HookName.PostCompact,
    {
      model: "",
      provider: PROVIDER,
      original_message_count: 0,
      new_message_count: 0,
      keep_recent: 0,
      trigger: field(ctx.input, "trigger") ?? "auto",
      persisted: true,
    },
    ctx.corr,
    { signal: ctx.signal },
  );
  return NOTHING;
}

/** An event with no public hook (Notification, and any event this gateway does not know): recorded only. */
export async function recordOnlyEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  const type = field(ctx.input, "notification_type");
  ctx.plane.emit(
    RuntimeEvent.ADAPTER_DISPATCH_ATTEMPT,
    {
      adapter: "claude-code",
      hook_event_name: ctx.input.hook_event_name.slice(0, 64),
      ...(type ? { notification_type: type.slice(0, 64) } : {}),
    },
    ctx.corr,
  );
  return NOTHING;
}
