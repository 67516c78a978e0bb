import { randomUUID } from "node:crypto";
import {
  type ClaudeCodeHookOutput,
  decisionReason,
  HookName,
  isBlocked,
  RuntimeEvent,
  sha256,
} from "@geode/contracts";
import { derivedId } from "../tool-calls.js";
import { asObject, type EventContext, field } from "./event-context.js";
import { denyTool, NOTHING, permissionAnswer, preToolUse } from "./outputs.js";
import { askPermission, safetyLevelOf } from "./permission.js";
import { argumentsAsSeen, updatedToolInput } from "./updated-input.js";

/**
 * PreToolUse → PreToolUse: block → deny; rewrite → `updatedInput` (never with an `allow`: a rewrite
 * grants no permission); request_permission → PermissionRequest and the approvers, whose verdict
 * is the permission decision (`ask` when nobody decided, so Claude Code asks its user).
 */
export async function preToolUseEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  const { input, plane, corr, signal } = ctx;
  const toolName = field(input, "tool_name") as string;
  const original = asObject(input["tool_input"]);
  const outcome = await plane.invokeHook(
    HookName.PreToolUse,
    { tool_name: toolName, arguments: original },
    corr,
    { signal },
  );
  if (isBlocked(outcome)) return denyTool(decisionReason(outcome, ["block"], "blocked"));

  let updated: Record<string, unknown> | undefined;
  if (outcome.decisions.some((d) => d.action === "rewrite")) {
    if (outcome.payload["tool_name"] !== toolName)
      return denyTool(
        `${decisionReason(outcome, ["rewrite"], "rewritten")} (the rewrite names another tool, which Claude Code cannot run in this call's place)`,
      );
    const rewritten = asObject(outcome.payload["arguments"]);
    updated = updatedToolInput(original, argumentsAsSeen(toolName, original), rewritten) ?? undefined;
  }

  let output: ClaudeCodeHookOutput = updated ? preToolUse(undefined, undefined, updated) : NOTHING;
  if (outcome.decisions.some((d) => d.action === "request_permission")) {
    const verdict = await askPermission(ctx, toolName, updated ?? original);
    if (verdict?.behavior === "deny") return denyTool(verdict.reason);
    output =
      verdict === null
        ? preToolUse("ask", decisionReason(outcome, ["request_permission"], "permission requested"), updated)
        : preToolUse("allow", verdict.reason, updated);
  }
  const args = updated ?? original;
  ctx.toolCalls.remember(
    corr.session_id,
    toolName,
    corr.tool_call_id,
    [original, args],
    updated !== undefined,
  );
  // Only an outright allow lets the call go now; otherwise a permission prompt may still refuse it.
  if (
    output.hookSpecificOutput?.hookEventName === "PreToolUse" &&
    output.hookSpecificOutput.permissionDecision === "allow"
  )
    recordStarted(ctx, toolName, args);
  return output;
}

/**
 * `tool_exec_started` and `tool.called`, once per call, when the plane knows the call goes ahead:
 * at PreToolUse when the plane allowed it outright, when an approver on the plane allowed its
 * permission prompt, else (the agent's own permission rules decided) when the agent reports its
 * result. Never before a permission prompt is decided, so the timeline never shows a refused call
 * as run. The records' ids derive from the call, so a start recorded twice is stored once.
 */
function recordStarted(ctx: EventContext, toolName: string, args: Record<string, unknown>): void {
  const { plane, corr, toolCalls } = ctx;
  const id = corr.tool_call_id;
  if (id !== "" && !toolCalls.start(corr.session_id, id)) return;
  const rewritten = id !== "" && toolCalls.rewritten(corr.session_id, id);
  const effect = safetyLevelOf(toolName);
  const ids = (what: string) => (id === "" ? undefined : derivedId(corr.session_id, id, what));
  plane.emit(
    RuntimeEvent.TOOL_EXEC_STARTED,
    { tool_name: toolName, effect, rewritten },
    corr,
    ids("tool_exec_started"),
  );
  plane.timeline(
    "tool.called",
    { tool_name: toolName, effect, arguments_sha256: sha256(args) },
    corr,
    ids("tool.called"),
  );
}

/**
 * PermissionRequest → PermissionRequest (then the human approvers): allow / deny →
 * `decision.behavior`; nobody deciding → `{}`, so Claude Code asks its own user.
 */
export async function permissionRequestEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  const toolName = field(ctx.input, "tool_name") as string;
  const args = asObject(ctx.input["tool_input"]);
  // The prompt does not name its call: it is the one PreToolUse saw with these arguments.
  const toolCallId = ctx.toolCalls.idOf(ctx.corr.session_id, toolName, args);
  const call = toolCallId === "" ? ctx : { ...ctx, corr: { ...ctx.corr, tool_call_id: toolCallId } };
  const verdict = await askPermission(call, toolName, args);
  if (verdict === null) return NOTHING;
  if (verdict.behavior === "deny") return permissionAnswer("deny", verdict.reason);
  recordStarted(call, toolName, args);
  return permissionAnswer("allow");
}

/**
 * PostToolUse / PostToolUseFailure → PostToolUse (`result` = the tool's response or its error,
 * `executed: true`): add_context → `additionalContext` (the reasons in handler order); block →
 * `{"decision": "block", "reason"}`. `tool_exec_ended` (and `tool_exec_failed`) go out first.
 */
export async function postToolUseEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  const { input, plane, corr, signal } = ctx;
  const failed = input.hook_event_name === "PostToolUseFailure";
  const toolName = field(input, "tool_name") as string;
  const args = asObject(input["tool_input"]);
  const result = failed
    ? {
        error: field(input, "error") ?? "the tool failed",
        ...(typeof input["is_interrupt"] === "boolean" ? { is_interrupt: input["is_interrupt"] } : {}),
      }
    : asObject(input["tool_response"]);
  const duration = input["duration_ms"];
  const ended = {
    tool_name: toolName,
    effect: safetyLevelOf(toolName),
    has_error: failed,
    outcome: failed ? (input["is_interrupt"] === true ? "interrupted" : "error") : "ok",
    ...(typeof duration === "number" && Number.isFinite(duration) ? { duration_ms: duration } : {}),
  };
  recordStarted(ctx, toolName, args);
  const endedId = randomUUID();
  plane.emit(RuntimeEvent.TOOL_EXEC_ENDED, ended, corr, endedId);
  if (failed) plane.emit(RuntimeEvent.TOOL_EXEC_FAILED, { ...ended, ended_event_id: endedId }, corr);

  const outcome = await plane.invokeHook(
    HookName.PostToolUse,
    { tool_name: toolName, arguments: args, result, has_error: failed, executed: true },
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
  return {
    ...(blocked ? { decision: "block" as const, reason: decisionReason(outcome, ["block"], "blocked") } : {}),
    ...(contexts.length > 0
      ? {
          hookSpecificOutput: {
            hookEventName: failed ? ("PostToolUseFailure" as const) : ("PostToolUse" as const),
            additionalContext: contexts.join("\n\n"),
          },
        }
      : {}),
  };
}

/** PermissionDenied (Claude Code's own permission check said no): recorded as `approval_transition`. */
export async function permissionDeniedEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  ctx.plane.emit(
    RuntimeEvent.APPROVAL_TRANSITION,
    {
      tool_name: field(ctx.input, "tool_name") ?? "",
      decision: "deny",
      approver: "claude-code",
      source: "agent",
    },
    ctx.corr,
  );
  return NOTHING;
}
