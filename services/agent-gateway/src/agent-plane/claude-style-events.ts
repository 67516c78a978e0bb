import { RuntimeEvent } from "@geode/contracts";
import type { AgentCall } from "./agent-call.js";
import {
  block,
  type ClaudeStyleOutput,
  denyTool,
  NOTHING,
  permissionAnswer,
  preToolUseOutput,
  stopWith,
} from "./claude-style-outputs.js";
import { postCompact, preCompact } from "./compaction.js";
import { promptRefusal, submitPrompt } from "./prompt.js";
import { recordOnly } from "./record-only.js";
import { llmFailed, verifyStop } from "./stop.js";
import { subagentStarted, subagentStopped } from "./subagents.js";
import { agentPermissionPrompt, asObject, permissionDenied, postToolUse, preToolUse } from "./tool-use.js";

/*
 * The events of agents whose hooks speak Claude Code's words (Claude Code itself, Codex CLI, and
 * Copilot CLI under its Claude-style entries): the same input field names (`hook_event_name`,
 * `prompt`, `tool_name`, `tool_input`, `tool_use_id`, `tool_response`, `last_assistant_message`,
 * …) and the same output JSON. What differs between them is a few rules.
 */

/** An input of such an agent: its common fields checked by its codec, the rest as it sent them. */
interface ClaudeStyleInput {
  session_id: string;
  hook_event_name: string;
  [field: string]: unknown;
}

/** Where such agents differ. */
export interface ClaudeStyleRules {
  /**
   * What a rewrite needs: `always` (the agent takes `updatedInput` alone), or `bypass` (the agent
   * takes it only with an `allow`, so it is applied only when the agent's own approval is already
   * skipped, `permission_mode` `bypassPermissions`; otherwise the call is denied, naming the rewrite),
   * or `never` (the agent ignores `updatedInput`: the call is denied, naming the rewrite).
   */
  rewrite: "always" | "bypass" | "never";
  /** What nobody deciding a requested permission becomes: `ask` the agent's user, or `deny` (an agent that cannot ask). */
  unanswered: "ask" | "deny";
  /** What a PreCompact `defer` becomes: `block` (the agent skips this compaction), or `ignore` (the agent cannot skip one). */
  defer: "block" | "ignore";
  /**
   * What a Stop escalation (a spent revise budget among others) becomes: `stop` (`{"continue":
   * false, "stopReason"}`, the default), or `accept` (`{}`: the agent would read `continue: false`
   * on Stop as one more block and go on, so the turn ends and the answer waits for review).
   */
  escalate?: "stop" | "accept";
}

/** One event, run through the plane and answered in the agent's output format. */
export type ClaudeStyleEvent = (call: AgentCall, input: ClaudeStyleInput) => Promise<ClaudeStyleOutput>;

/** A string field of the input (validated by the event's schema before the handler runs). */
function field(input: ClaudeStyleInput, name: string): string | undefined {
  const v = input[name];
  return typeof v === "string" ? v : undefined;
}

const toolUse = (input: ClaudeStyleInput) => ({
  tool_name: field(input, "tool_name") as string,
  args: asObject(input["tool_input"]),
});

/** SessionStart → the session is created (or resumed: a new generation), then SessionStart runs. */
const sessionStart: ClaudeStyleEvent = async (call, input) => {
  const facts = { source: field(input, "source"), model: field(input, "model") };
  await call.sessions.start(call.agent, call.corr, facts, call.signal);
  return NOTHING;
};

/** SessionEnd → the session is completed, then SessionEnd runs and the run is closed. */
const sessionEnd: ClaudeStyleEvent = async (call, input) => {
  await call.sessions.end(call.agent, call.corr, field(input, "reason") ?? "other", call.signal);
  return NOTHING;
};

/**
 * UserPromptSubmit → UserPromptSubmit (`user_input` = prompt): block → `{"decision": "block",
 * "reason"}`. These agents cannot take a changed prompt, so a rewrite blocks the original too (it
 * must not reach the model as it was) and the reason carries the rewritten prompt to send instead.
 */
const userPromptSubmit: ClaudeStyleEvent = async (call, input) => {
  const refusal = promptRefusal(await submitPrompt(call, field(input, "prompt") ?? ""), "this agent");
  return refusal === null ? NOTHING : block(refusal);
};

/**
 * PreToolUse → PreToolUse: block → deny; rewrite → `updatedInput` (never with an `allow` where the
 * agent takes it alone: a rewrite grants no permission; where it takes it only with an `allow`,
 * only when the agent skips its own approval anyway, else a deny naming the rewrite);
 * request_permission → PermissionRequest and the approvers, whose verdict is the permission
 * decision (nobody deciding: `ask` the agent's user, or a deny where the agent cannot ask).
 */
const preToolUseEvent =
  (rules: ClaudeStyleRules): ClaudeStyleEvent =>
  async (call, input) => {
    const verdict = await preToolUse(call, toolUse(input));
    if (verdict.action === "deny") return denyTool(verdict.reason);
    const { updated, permission } = verdict;
    if (permission?.behavior === "ask" && rules.unanswered === "deny")
      return denyTool(
        `${permission.reason} (nobody answered, and this agent cannot ask its user from a hook)`,
      );
    if (updated && rules.rewrite === "never")
      return denyTool(
        `${verdict.rewriteReason ?? "rewritten"} (this agent cannot run a rewritten call: run the rewritten call instead)`,
      );
    if (updated && rules.rewrite === "bypass") {
      if (input["permission_mode"] !== "bypassPermissions" && permission?.behavior !== "allow")
        return denyTool(
          `${verdict.rewriteReason ?? "rewritten"} (this agent runs a rewritten call only with an allow, which the plane gives only where the agent's own approval is skipped; run the rewritten call instead)`,
        );
      return preToolUseOutput("allow", permission?.reason ?? verdict.rewriteReason, updated);
    }
    if (permission) return preToolUseOutput(permission.behavior, permission.reason, updated);
    return updated ? preToolUseOutput(undefined, undefined, updated) : NOTHING;
  };

/**
 * PermissionRequest → PermissionRequest (then the human approvers): allow / deny →
 * `decision.behavior`; nobody deciding → `{}`, so the agent asks its own user.
 */
const permissionRequest: ClaudeStyleEvent = async (call, input) => {
  const verdict = await agentPermissionPrompt(call, toolUse(input));
  if (verdict.behavior === "none") return NOTHING;
  return verdict.behavior === "allow" ? permissionAnswer("allow") : permissionAnswer("deny", verdict.reason);
};

/**
 * PostToolUse / PostToolUseFailure → PostToolUse (`result` = the tool's response or its error,
 * `executed: true`): add_context → `additionalContext` (the reasons in handler order); block →
 * `{"decision": "block", "reason"}`.
 */
const postToolUseEvent: ClaudeStyleEvent = async (call, input) => {
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

/** PermissionDenied (the agent's own permission check said no): recorded as `approval_transition`. */
const permissionDeniedEvent: ClaudeStyleEvent = async (call, input) => {
  permissionDenied(call, field(input, "tool_name") ?? "");
  return NOTHING;
};

/**
 * Stop → the verifier (candidate = `last_assistant_message`): accept → `{}`; revise / continue →
 * `{"decision": "block", "reason": instruction}` (the agent goes on); an escalation (the budget of two
 * per root turn spent, among others) ends the loop: `{"continue": false, "stopReason"}`, or `{}` for an
 * agent that reads that as one more block.
 */
const stopEvent =
  (rules: ClaudeStyleRules): ClaudeStyleEvent =>
  async (call, input) => {
    const verdict = await verifyStop(call, field(input, "last_assistant_message") ?? "");
    if (verdict.action === "accept") return NOTHING;
    if (verdict.action === "revise") return block(verdict.instruction);
    return rules.escalate === "accept" ? NOTHING : stopWith(verdict.reason);
  };

/** StopFailure (the turn ended on an API error): recorded as `llm_call_failed`. */
const stopFailure: ClaudeStyleEvent = async (call, input) => {
  llmFailed(call, input["error"]);
  return NOTHING;
};

const subagent = (input: ClaudeStyleInput) => ({
  agent_id: field(input, "agent_id") as string,
  agent_type: field(input, "agent_type") ?? "",
});

/** SubagentStart → SubagentStart (task = the agent's id for its sub-agent). */
const subagentStart: ClaudeStyleEvent = async (call, input) => {
  await subagentStarted(call, subagent(input));
  return NOTHING;
};

/** SubagentStop → SubagentStop (these agents report neither duration nor failure: 0 and success). */
const subagentStop: ClaudeStyleEvent = async (call, input) => {
  await subagentStopped(call, subagent(input));
  return NOTHING;
};

/**
 * PreCompact → PreCompact (these agents report no message counts: 0): defer → `{"decision":
 * "block", "reason"}` (the agent skips this compaction), or, for an agent that cannot skip one,
 * recorded and compaction goes on (stopping the whole session instead would be worse).
 */
const preCompactEvent =
  (rules: ClaudeStyleRules): ClaudeStyleEvent =>
  async (call, input) => {
    const verdict = await preCompact(call, {
      trigger: field(input, "trigger") ?? "auto",
      model: field(input, "model"),
    });
    return verdict.defer && rules.defer === "block" ? block(verdict.defer) : NOTHING;
  };

/** PostCompact → PostCompact (the summary itself is never forwarded). */
const postCompactEvent: ClaudeStyleEvent = async (call, input) => {
  await postCompact(call, { trigger: field(input, "trigger") ?? "auto" });
  return NOTHING;
};

/** An event with no public hook (Notification, and any event this gateway does not know): recorded only. */
export const recordOnlyEvent: ClaudeStyleEvent = async (call, input) => {
  const type = field(input, "notification_type");
  recordOnly(call, input.hook_event_name, type ? { notification_type: type } : {});
  return NOTHING;
};

/** The user interrupted the turn (Codex's Interrupt): recorded as `execution_cancelled`. */
export const interruptEvent: ClaudeStyleEvent = async (call) => {
  call.plane.emit(RuntimeEvent.EXECUTION_CANCELLED, { agent: call.agent.kind, by: "user" }, call.corr);
  return NOTHING;
};

/** Every event these agents share, mapped to the plane's steps under `rules`. */
export function claudeStyleHandlers(rules: ClaudeStyleRules) {
  return {
    SessionStart: sessionStart,
    UserPromptSubmit: userPromptSubmit,
    PreToolUse: preToolUseEvent(rules),
    PermissionRequest: permissionRequest,
    PostToolUse: postToolUseEvent,
    PostToolUseFailure: postToolUseEvent,
    PermissionDenied: permissionDeniedEvent,
    Stop: stopEvent(rules),
    StopFailure: stopFailure,
    SubagentStart: subagentStart,
    SubagentStop: subagentStop,
    PreCompact: preCompactEvent(rules),
    PostCompact: postCompactEvent,
    Notification: recordOnlyEvent,
    SessionEnd: sessionEnd,
  } as const satisfies Record<string, ClaudeStyleEvent>;
}
