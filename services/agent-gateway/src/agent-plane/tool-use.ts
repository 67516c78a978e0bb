import { randomUUID } from "node:crypto";
import {
  decisionReason,
  HookName,
  isBlocked,
  RuntimeEvent,
  sha256,
  toolCalledPayload,
  toolRefusedPayload,
} from "@geode/contracts";
import { decidePermission, type PermissionVerdict } from "@geode/lifecycle";
import type { AgentCall } from "./agent-call.js";
import { derivedId } from "./tool-calls.js";
import { safetyLevelOf } from "./tool-kinds.js";
import { argumentsAsSeen, updatedToolInput } from "./updated-input.js";

/** A tool call as the agent reports it: the tool's name and its input (an object). */
export interface ToolUse {
  tool_name: string;
  args: Record<string, unknown>;
}

/**
 * What the plane says before a tool call runs: deny it, or let it go, with the input to run
 * instead (a rewrite, as the agent should run it) and what became of a permission the handlers
 * asked for: `allow` (an approver on the plane said yes), `ask` (nobody decided: the agent's own
 * user should be asked).
 */
export type PreToolVerdict =
  | { action: "deny"; reason: string }
  | {
      action: "go";
      updated?: Record<string, unknown>;
      /** The rewriting handlers' reason, when the input was rewritten. */
      rewriteReason?: string;
      permission?: { behavior: "allow" | "ask"; reason: string };
    };

/**
 * PreToolUse: block → deny; a rewrite → the input the agent should run (keys the handlers never
 * saw keep the agent's values; a rewrite naming another tool is denied: an agent cannot run
 * another tool in the call's place); request_permission → PermissionRequest and the approvers,
 * whose verdict is the permission (`ask` when nobody decided).
 */
export async function preToolUse(agentCall: AgentCall, use: ToolUse): Promise<PreToolVerdict> {
  const { tool_name: toolName, args: original } = use;
  agentCall.guarded.seen(agentCall.plane, agentCall.agent, "PreToolUse");
  const call = withToolCallId(
    agentCall,
    agentCall.toolCalls.announce(agentCall.corr.session_id, toolName, agentCall.corr.tool_call_id, original),
  );
  const { plane, corr, signal } = call;
  const outcome = await plane.invokeHook(
    HookName.PreToolUse,
    { tool_name: toolName, arguments: original },
    corr,
    {
      signal,
    },
  );
  if (isBlocked(outcome)) return refused(call, use, decisionReason(outcome, ["block"], "blocked"));

  let updated: Record<string, unknown> | undefined;
  let rewriteReason: string | undefined;
  if (outcome.decisions.some((d) => d.action === "rewrite")) {
    rewriteReason = decisionReason(outcome, ["rewrite"], "rewritten");
    if (outcome.payload["tool_name"] !== toolName)
      return refused(
        call,
        use,
        `${rewriteReason} (the rewrite names another tool, which the agent cannot run in this call's place)`,
      );
    const rewritten = asObject(outcome.payload["arguments"]);
    updated = updatedToolInput(original, argumentsAsSeen(toolName, original), rewritten) ?? undefined;
    if (updated === undefined) rewriteReason = undefined;
  }
  const args = updated ?? original;
  call.toolCalls.remember(corr.session_id, corr.tool_call_id, args, updated !== undefined);
  let permission: { behavior: "allow" | "ask"; reason: string } | undefined;
  if (outcome.decisions.some((d) => d.action === "request_permission")) {
    const verdict = await askPermission(call, { tool_name: toolName, args });
    if (verdict.behavior === "deny") return { action: "deny", reason: verdict.reason };
    permission =
      verdict.behavior === "allow"
        ? { behavior: "allow", reason: verdict.reason }
        : {
            behavior: "ask",
            reason: decisionReason(outcome, ["request_permission"], "permission requested"),
          };
  }
  return {
    action: "go",
    ...(updated ? { updated, rewriteReason } : {}),
    ...(permission ? { permission } : {}),
  };
}

/** A call PreToolUse refused: recorded (`refusalRecord`, status `blocked`) and denied to the agent. */
function refused(call: AgentCall, use: ToolUse, reason: string): PreToolVerdict {
  call.toolCalls.refused(call.corr.session_id, call.corr.tool_call_id);
  refusalRecord(call, use, "blocked", reason);
  return { action: "deny", reason };
}

/**
 * A refused call never runs, so its only record naming the tool is this `tool.completed` (not
 * executed), with the refusal's reason and what the call would have acted on for the story.
 */
function refusalRecord(call: AgentCall, use: ToolUse, status: "blocked" | "denied", reason: string): void {
  call.plane.timeline(
    "tool.completed",
    toolRefusedPayload(call.agent.kind, use.tool_name, use.args, status, reason),
    call.corr,
  );
}

/**
 * The agent's permission prompt for a call (or PreToolUse's request_permission):
 * PermissionRequest, then the human approvers when no handler allowed or denied. `none` means
 * nobody decided, so the agent asks its own user. An allow lets the call go: its start is recorded.
 * A prompt that does not name its call gets the id of the one PreToolUse announced with this input.
 */
async function askPermission(call: AgentCall, use: ToolUse): Promise<PermissionVerdict> {
  const { plane, signal } = call;
  const named = call.corr.tool_call_id;
  const toolCallId =
    named !== "" ? named : call.toolCalls.idOf(call.corr.session_id, use.tool_name, use.args);
  const corr = toolCallId === named ? call.corr : { ...call.corr, tool_call_id: toolCallId };
  const verdict = await decidePermission(
    {
      events: plane.lifecycle.events,
      approvalTimeoutMs: plane.approvalTimeoutMs,
      approve: (request, options) => plane.approve(request, options),
      invoke: (payload, guarded) =>
        plane.invokeHook(HookName.PermissionRequest, payload, corr, { signal, guarded }),
    },
    {
      tool_name: use.tool_name,
      safety_level: safetyLevelOf(call.agent.kind, use.tool_name),
      args: use.args,
      correlation: corr,
      signal,
    },
  );
  if (verdict.behavior === "allow") recordStarted({ ...call, corr }, use);
  if (verdict.behavior === "deny") {
    call.toolCalls.refused(corr.session_id, toolCallId);
    refusalRecord({ ...call, corr }, use, "denied", verdict.reason);
  }
  return verdict;
}

/** The agent's own permission prompt for a call (its PermissionRequest hook): `askPermission`. */
export function agentPermissionPrompt(call: AgentCall, use: ToolUse): Promise<PermissionVerdict> {
  call.guarded.seen(call.plane, call.agent, "PermissionRequest");
  return askPermission(call, use);
}

/**
 * `tool_exec_started` and `tool.called`, once per call, when the plane knows the call goes ahead:
 * at PreToolUse when the plane allowed it outright, when an approver on the plane allowed its
 * permission prompt, else (the agent's own permission rules decided) when the agent reports its
 * result. Never before a permission prompt is decided, so the timeline never shows a refused call
 * as run. The records' ids derive from the call, so a start recorded twice is stored once.
 */
function recordStarted(call: AgentCall, use: ToolUse): void {
  const { plane, corr, toolCalls } = call;
  const id = corr.tool_call_id;
  if (id !== "" && !toolCalls.start(corr.session_id, id)) return;
  const rewritten = id !== "" && toolCalls.rewritten(corr.session_id, id);
  const effect = safetyLevelOf(call.agent.kind, use.tool_name);
  const ids = (what: string) => (id === "" ? undefined : derivedId(corr.session_id, id, what));
  plane.emit(
    RuntimeEvent.TOOL_EXEC_STARTED,
    { tool_name: use.tool_name, effect, rewritten },
    corr,
    ids("tool_exec_started"),
  );
  plane.timeline(
    "tool.called",
    toolCalledPayload(call.agent.kind, use.tool_name, effect, use.args, sha256(use.args)),
    corr,
    ids("tool.called"),
  );
}

/** A tool call's result as the agent reports it. */
export interface ToolResult extends ToolUse {
  /** The tool's response (an object), or `{error}` when it failed. */
  result: Record<string, unknown>;
  failed: boolean;
  interrupted?: boolean | undefined;
  duration_ms?: number | undefined;
}

/** What PostToolUse handlers said: contexts for the model's next request, and a block. */
export interface PostToolVerdict {
  contexts: string[];
  block?: string;
}

/**
 * The agent reports a call's result: its start (if not yet recorded) and `tool_exec_ended` (and
 * `tool_exec_failed`) go out first, then PostToolUse (`executed: true`); add_context reasons come
 * back in handler order.
 */
export async function postToolUse(agentCall: AgentCall, done: ToolResult): Promise<PostToolVerdict> {
  const { tool_name: toolName, failed } = done;
  const call = matchedCall(agentCall, done);
  const { plane, corr, signal } = call;
  const ended = {
    tool_name: toolName,
    effect: safetyLevelOf(call.agent.kind, toolName),
    has_error: failed,
    outcome: failed ? (done.interrupted === true ? "interrupted" : "error") : "ok",
    ...(done.duration_ms !== undefined && Number.isFinite(done.duration_ms)
      ? { duration_ms: done.duration_ms }
      : {}),
  };
  recordStarted(call, done);
  const endedId = randomUUID();
  plane.emit(RuntimeEvent.TOOL_EXEC_ENDED, ended, corr, endedId);
  if (failed) plane.emit(RuntimeEvent.TOOL_EXEC_FAILED, { ...ended, ended_event_id: endedId }, corr);

  const outcome = await plane.invokeHook(
    HookName.PostToolUse,
    { tool_name: toolName, arguments: done.args, result: done.result, has_error: failed, executed: true },
    corr,
    { signal },
  );
  const contexts = outcome.decisions
    .filter((d) => d.action === "add_context" && d.reason)
    .map((d) => d.reason as string);
  const blocked = isBlocked(outcome);
  plane.timeline(
    "tool.completed",
    {
      tool_name: toolName,
      status: blocked ? "blocked" : failed ? "failed" : "completed",
      has_error: failed,
      executed: true,
    },
    corr,
  );
  return { contexts, ...(blocked ? { block: decisionReason(outcome, ["block"], "blocked") } : {}) };
}

/** The call with `toolCallId` as its correlation's tool call. */
function withToolCallId(call: AgentCall, toolCallId: string): AgentCall {
  return toolCallId === call.corr.tool_call_id
    ? call
    : { ...call, corr: { ...call.corr, tool_call_id: toolCallId } };
}

/**
 * The call whose result the agent reports, with the id PreToolUse gave it. A result whose
 * PreToolUse never reached the plane is a call nobody governed: it is recorded as
 * `governance.gap` (under a fresh id when the agent names none, so its records still form one
 * call), counted, and logged without the call's content.
 */
function matchedCall(call: AgentCall, done: ToolResult): AgentCall {
  const { corr, agent } = call;
  const found = call.toolCalls.finish(corr.session_id, done.tool_name, corr.tool_call_id, done.args);
  if (found.announced) return withToolCallId(call, found.toolCallId);
  const gap = withToolCallId(call, found.toolCallId === "" ? randomUUID() : found.toolCallId);
  gap.plane.timeline(
    "governance.gap",
    { agent: agent.name, agent_kind: agent.kind, tool_name: done.tool_name, missing: "PreToolUse" },
    gap.corr,
    derivedId(gap.corr.session_id, gap.corr.tool_call_id, "governance.gap"),
  );
  call.plane.observer.governanceGap(agent.kind);
  call.log.warn(
    { agent: agent.name, agent_kind: agent.kind, session_id: corr.session_id },
    "a tool result reached the plane without its PreToolUse: the call was not governed",
  );
  return gap;
}

/** The agent's own permission check refused a call: recorded as `approval_transition`. */
export function permissionDenied(call: AgentCall, toolName: string): void {
  call.plane.emit(
    RuntimeEvent.APPROVAL_TRANSITION,
    { tool_name: toolName, decision: "deny", approver: call.agent.kind, source: "agent" },
    call.corr,
  );
}

/** A JSON value as a free object: objects as they are, anything else under `value`. */
export function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : { value: value ?? null };
}
