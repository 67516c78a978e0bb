import type { ClaudeCodeHookInput, ClaudeCodeHookOutput } from "@geode/contracts";
import type { AgentCall } from "../agent-plane/agent-call.js";
import { postCompact, preCompact } from "../agent-plane/compaction.js";
import { submitPrompt } from "../agent-plane/prompt.js";
import { recordOnly } from "../agent-plane/record-only.js";
import { llmFailed, verifyStop } from "../agent-plane/stop.js";
import { subagentStarted, subagentStopped } from "../agent-plane/subagents.js";
import {
  askPermission,
  asObject,
  permissionDenied,
  postToolUse,
  preToolUse,
} from "../agent-plane/tool-use.js";
import { block, denyTool, NOTHING, permissionAnswer, preToolUseOutput, stopWith } from "./outputs.js";

/** One Claude Code event, run through the plane and answered in Claude Code's output format. */
export type ClaudeCodeEvent = (call: AgentCall, input: ClaudeCodeHookInput) => Promise<ClaudeCodeHookOutput>;

/** A string field of the input (validated by the event's schema before the handler runs). */
function field(input: ClaudeCodeHookInput, name: string): string | undefined {
  const v = input[name];
  return typeof v === "string" ? v : undefined;
}

const toolUse = (input: ClaudeCodeHookInput) => ({
  tool_name: field(input, "tool_name") as string,
  args: asObject(input["tool_input"]),
});

/** SessionStart → the session is created (or resumed: a new generation), then SessionStart runs. */
const sessionStart: ClaudeCodeEvent = async (call, input) => {
  const facts = { source: field(input, "source"), model: field(input, "model") };
  await call.sessions.start(call.agent, call.corr, facts, call.signal);
  return NOTHING;
};

/** SessionEnd → the session is completed, then SessionEnd runs and the run is closed. */
const sessionEnd: ClaudeCodeEvent = async (call, input) => {
  await call.sessions.end(call.agent, call.corr, field(input, "reason") ?? "other", call.signal);
  return NOTHING;
};

/**
 * UserPromptSubmit → UserPromptSubmit (`user_input` = prompt): block → `{"decision": "block",
 * "reason"}`. Claude Code cannot take a changed prompt, so a rewrite blocks the original too (it
 * must not reach the model as it was) and the reason carries the rewritten prompt to send instead.
 */
const userPromptSubmit: ClaudeCodeEvent = async (call, input) => {
  const verdict = await submitPrompt(call, field(input, "prompt") ?? "");
  if (verdict.action === "block") return block(verdict.reason);
  if (verdict.action === "rewrite")
    return block(
      `${verdict.reason}\nThe prompt was rewritten and Claude Code cannot send a changed prompt, so it was not sent. Send this instead:\n${verdict.prompt}`,
    );
  return NOTHING;
};

/**
 * PreToolUse → PreToolUse: block → deny; rewrite → `updatedInput` (never with an `allow`: a rewrite
 * grants no permission); request_permission → PermissionRequest and the approvers, whose verdict
 * is the permission decision (`ask` when nobody decided, so Claude Code asks its user).
 */
const preToolUseEvent: ClaudeCodeEvent = async (call, input) => {
  const verdict = await preToolUse(call, toolUse(input));
  if (verdict.action === "deny") return denyTool(verdict.reason);
  if (verdict.permission)
    return preToolUseOutput(verdict.permission.behavior, verdict.permission.reason, verdict.updated);
  return verdict.updated ? preToolUseOutput(undefined, undefined, verdict.updated) : NOTHING;
};

/**
 * PermissionRequest → PermissionRequest (then the human approvers): allow / deny →
 * `decision.behavior`; nobody deciding → `{}`, so Claude Code asks its own user.
 */
const permissionRequest: ClaudeCodeEvent = async (call, input) => {
  const verdict = await askPermission(call, toolUse(input));
  if (verdict.behavior === "none") return NOTHING;
  return verdict.behavior === "allow" ? permissionAnswer("allow") : permissionAnswer("deny", verdict.reason);
};

/**
 * PostToolUse / PostToolUseFailure → PostToolUse (`result` = the tool's response or its error,
 * `executed: true`): add_context → `additionalContext` (the reasons in handler order); block →
 * `{"decision": "block", "reason"}`.
 */
const postToolUseEvent: ClaudeCodeEvent = async (call, input) => {
  const failed = input.hook_event_name === "PostToolUseFailure";
  const interrupted = input["is_interrupt"];
  const duration = input["duration_ms"];
  const verdict = await postToolUse(call, {
    ...toolUse(input),
    result: failed
      ? {
          error: field(input, "error") ?? "the tool failed",
          ...(typeof interrupted === "boolean" ? { is_interrupt: interrupted } : {}),
        }
      : asObject(input["tool_response"]),
    failed,
    interrupted: interrupted === true,
    duration_ms: typeof duration === "number" ? duration : undefined,
  });
  return {
    ...(verdict.block ? { decision: "block" as const, reason: verdict.block } : {}),
    ...(verdict.contexts.length > 0
      ? {
          hookSpecificOutput: {
            hookEventName: failed ? ("PostToolUseFailure" as const) : ("PostToolUse" as const),
            additionalContext: verdict.contexts.join("\n\n"),
          },
        }
      : {}),
  };
};

/** PermissionDenied (Claude Code's own permission check said no): recorded as `approval_transition`. */
const permissionDeniedEvent: ClaudeCodeEvent = async (call, input) => {
  permissionDenied(call, field(input, "tool_name") ?? "");
  return NOTHING;
};

/**
 * Stop → the verifier (candidate = `last_assistant_message`): accept → `{}`; revise / continue →
 * `{"decision": "block", "reason": instruction}` (Claude goes on); an escalation (the budget of two
 * per root turn spent, among others) ends the loop: `{"continue": false, "stopReason"}`.
 */
const stop: ClaudeCodeEvent = async (call, input) => {
  const verdict = await verifyStop(call, field(input, "last_assistant_message") ?? "");
  if (verdict.action === "accept") return NOTHING;
  return verdict.action === "revise" ? block(verdict.instruction) : stopWith(verdict.reason);
};

/** StopFailure (the turn ended on an API error): recorded as `llm_call_failed`. */
const stopFailure: ClaudeCodeEvent = async (call, input) => {
  llmFailed(call, input["error"]);
  return NOTHING;
};

const subagent = (input: ClaudeCodeHookInput) => ({
  agent_id: field(input, "agent_id") as string,
  agent_type: field(input, "agent_type") ?? "",
});

/** SubagentStart → SubagentStart (task = Claude Code's agent id). */
const subagentStart: ClaudeCodeEvent = async (call, input) => {
  await subagentStarted(call, subagent(input));
  return NOTHING;
};

/** SubagentStop → SubagentStop (Claude Code reports neither duration nor failure: 0 and success). */
const subagentStop: ClaudeCodeEvent = async (call, input) => {
  await subagentStopped(call, subagent(input));
  return NOTHING;
};

/**
 * PreCompact → PreCompact (Claude Code reports no message counts: 0): defer → `{"decision":
 * "block", "reason"}` (Claude Code skips this compaction).
 */
const preCompactEvent: ClaudeCodeEvent = async (call, input) => {
  const verdict = await preCompact(call, { trigger: field(input, "trigger") ?? "auto" });
  return verdict.defer ? block(verdict.defer) : NOTHING;
};

/** PostCompact → PostCompact (the summary itself is never forwarded). */
const postCompactEvent: ClaudeCodeEvent = async (call, input) => {
  await postCompact(call, { trigger: field(input, "trigger") ?? "auto" });
  return NOTHING;
};

/** An event with no public hook (Notification, and any event this gateway does not know): recorded only. */
export const recordOnlyEvent: ClaudeCodeEvent = async (call, input) => {
  const type = field(input, "notification_type");
  recordOnly(call, input.hook_event_name, type ? { notification_type: type } : {});
  return NOTHING;
};

/** The mapping of docs/claude-code.md: one handler per Claude Code event. */
export const CLAUDE_CODE_HANDLERS = {
  SessionStart: sessionStart,
  UserPromptSubmit: userPromptSubmit,
  PreToolUse: preToolUseEvent,
  PermissionRequest: permissionRequest,
  PostToolUse: postToolUseEvent,
  PostToolUseFailure: postToolUseEvent,
  PermissionDenied: permissionDeniedEvent,
  Stop: stop,
  StopFailure: stopFailure,
  SubagentStart: subagentStart,
  SubagentStop: subagentStop,
  PreCompact: preCompactEvent,
  PostCompact: postCompactEvent,
  Notification: recordOnlyEvent,
  SessionEnd: sessionEnd,
} as const;
