import { randomUUID } from "node:crypto";
import { decisionReason, HookName, isBlocked, RuntimeEvent, sanitizeText } from "@geode/contracts";
import type { EventContext } from "./event-context.js";

/** Claude Code tools that only read; everything else counts as a mutation (the safer reading). */
const READ_TOOLS = new Set(["Read", "Glob", "Grep", "LS", "NotebookRead", "TodoRead"]);
const COMMUNICATION_TOOLS = new Set(["WebFetch", "WebSearch"]);

/**
 * The `safety_level` of a Claude Code tool, in the tool-executor's effect words: `read`,
 * `communication` (web tools), else `mutation` (Bash, Write, Edit, MCP tools and any tool not
 * known to only read).
 */
export function safetyLevelOf(toolName: string): "read" | "communication" | "mutation" {
  if (READ_TOOLS.has(toolName)) return "read";
  if (COMMUNICATION_TOOLS.has(toolName)) return "communication";
  return "mutation";
}

/** A short, bounded, secret-masked description of a call for PermissionRequest and approvers. */
function describeCall(toolName: string, args: Record<string, unknown>): string {
  return sanitizeText(`${toolName} ${JSON.stringify(args)}`, 1024);
}

/** What the plane decided about a permission: allow or deny with a reason, or nobody decided. */
export type PermissionVerdict = { behavior: "allow" | "deny"; reason: string } | null;

/**
 * PermissionRequest, then the human approvers when no handler allowed or denied (`ask`, or no
 * decision): `{ns}.approval.request` with the approval timeout. Nobody answering is no verdict,
 * so Claude Code asks its own user.
 */
export async function askPermission(
  ctx: EventContext,
  toolName: string,
  args: Record<string, unknown>,
): Promise<PermissionVerdict> {
  const { plane, corr, signal } = ctx;
  const safety_level = safetyLevelOf(toolName);
  const detail = describeCall(toolName, args);
  const outcome = await plane.invokeHook(
    HookName.PermissionRequest,
    { tool_name: toolName, safety_level, detail },
    corr,
    { signal },
  );
  if (isBlocked(outcome, "deny"))
    return { behavior: "deny", reason: decisionReason(outcome, ["deny"], "denied") };
  const asked = outcome.decisions.some((d) => d.action === "ask");
  if (!asked && outcome.decisions.some((d) => d.action === "allow"))
    return { behavior: "allow", reason: decisionReason(outcome, ["allow"], "allowed") };

  const approval_id = randomUUID();
  plane.emit(RuntimeEvent.TOOL_APPROVAL_REQUESTED, { approval_id, tool_name: toolName, safety_level }, corr);
  const answer = await plane.requestApproval(
    { approval_id, tool_name: toolName, safety_level, detail, correlation: corr },
    { signal },
  );
  if (answer.source !== "approver") {
    plane.emit(
      RuntimeEvent.APPROVAL_TRANSITION,
      { approval_id, tool_name: toolName, decision: "none", source: answer.source },
      corr,
    );
    return null;
  }
  plane.emit(
    RuntimeEvent.APPROVAL_TRANSITION,
    {
      approval_id,
      tool_name: toolName,
      decision: answer.decision,
      approver: answer.approver,
      source: answer.source,
    },
    corr,
  );
  const why = answer.reason ?? "no reason given";
  return answer.decision === "allow"
    ? { behavior: "allow", reason: `approved by ${answer.approver}: ${why}` }
    : { behavior: "deny", reason: `approval denied by ${answer.approver}: ${why}` };
}
