import { randomUUID } from "node:crypto";
import { decisionReason, type ToolExecuteReply } from "@geode/contracts";
import { requestApproval } from "../approval-client.js";
import { type ToolCall, toolReply } from "./tool-call.js";

/**
 * PermissionRequest / approval, when the tool requires it or PreToolUse asked for it: `allow`
 * proceeds, `deny` (or a closed guard failing) denies; no decision or `ask` goes to a human on
 * `{ns}.approval.request`, and nobody answering in time denies.
 */
export async function approval(call: ToolCall): Promise<ToolExecuteReply | undefined> {
  const requested = call.preToolUse?.decisions.some((d) => d.action === "request_permission") ?? false;
  if (!call.definition.requires_approval && !requested) return undefined;
  const detail = describeCall(call.definition.name, call.args);
  const outcome = await call.invokeBeforeEffect("PermissionRequest", {
    tool_name: call.definition.name,
    safety_level: call.definition.effect,
    detail,
  });
  if (outcome.blocked || outcome.decisions.some((d) => d.action === "deny"))
    return toolReply("denied", { reason: decisionReason(outcome, ["deny"], "denied") });
  const asked = outcome.decisions.some((d) => d.action === "ask");
  if (!asked && outcome.decisions.some((d) => d.action === "allow")) return undefined;
  const denied = await askHuman(call, detail);
  return denied === null ? undefined : toolReply("denied", { reason: denied });
}

/** A human decides on `{ns}.approval.request`; returns the deny reason, or null when allowed. */
async function askHuman(call: ToolCall, detail: string): Promise<string | null> {
  const { deps, definition, correlation } = call;
  const approvalId = randomUUID();
  void deps.events.emit(
    "tool_approval_requested",
    { approval_id: approvalId, tool_name: definition.name, safety_level: definition.effect },
    correlation,
  );
  const answer = await requestApproval(
    deps.nc,
    deps.names,
    {
      approval_id: approvalId,
      tool_name: definition.name,
      safety_level: definition.effect,
      detail,
      correlation,
    },
    deps.config.approvalTimeoutMs,
  );
  void deps.events.emit(
    "approval_transition",
    {
      approval_id: approvalId,
      tool_name: definition.name,
      decision: answer.decision,
      approver: answer.approver,
      source: answer.source,
    },
    correlation,
  );
  if (answer.decision === "allow") return null;
  const by = answer.approver !== "none" ? ` by ${answer.approver}` : "";
  return `approval denied${by}: ${answer.reason ?? "no reason given"}`;
}

/** A short, bounded description of a call for PermissionRequest and approvers. */
export function describeCall(name: string, args: Record<string, unknown>): string {
  const text = `${name} ${JSON.stringify(args)}`;
  return text.length > 1024 ? `${text.slice(0, 1024)}…` : text;
}
