import { randomUUID } from "node:crypto";
import {
  type ApprovalRequest,
  type Correlation,
  type DispatchOutcome,
  decisionReason,
  type GuardedArguments,
  guardedArguments,
  type HookPayloadInput,
  isBlocked,
  RuntimeEvent,
  sanitizeText,
} from "@geode/contracts";
import type { ApprovalAnswer } from "./approval.js";
import type { LifecycleEvents } from "./lifecycle-deps.js";

/** A short, bounded, secret-masked description of a call, for PermissionRequest and approvers. */
export function describeCall(toolName: string, args: Record<string, unknown>): string {
  return sanitizeText(`${toolName} ${JSON.stringify(args)}`, 1024);
}

/**
 * What the plane decided about a call's permission: a PermissionRequest handler or a human
 * approver allowed or denied it, or nobody decided (`none`, with why). What `none` means is the
 * caller's rule: the tool-executor denies (headless runs fail closed); the agent gateway leaves the
 * question to the agent's own user.
 */
export type PermissionVerdict =
  | { behavior: "allow" | "deny"; reason: string; decided_by: "handler" | "approver" }
  | { behavior: "none"; reason: string };

export interface PermissionQuestion {
  tool_name: string;
  safety_level: string;
  args: Record<string, unknown>;
  correlation: Correlation;
  signal?: AbortSignal | undefined;
}

export interface PermissionDeps {
  events: LifecycleEvents;
  /** How long a human approver may take. */
  approvalTimeoutMs: number;
  /** Asks the human approvers (`requestApproval` on a connection). */
  approve(
    request: ApprovalRequest,
    options: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<ApprovalAnswer>;
  /**
   * Invokes PermissionRequest with the call's guarded facts beside it (the tool-executor's checks
   * the policy again around it).
   */
  invoke(
    payload: HookPayloadInput<"PermissionRequest">,
    guarded: GuardedArguments,
    signal?: AbortSignal,
  ): Promise<DispatchOutcome>;
}

/**
 * PermissionRequest, then, when no handler allowed or denied (`ask`, or no decision), a human on
 * `{ns}.approval.request` within the approval timeout, with `tool_approval_requested` and
 * `approval_transition` published around the question.
 */
export async function decidePermission(
  deps: PermissionDeps,
  question: PermissionQuestion,
): Promise<PermissionVerdict> {
  const { tool_name, safety_level, correlation, signal } = question;
  const detail = describeCall(tool_name, question.args);
  const outcome = await deps.invoke(
    { tool_name, safety_level, detail },
    guardedArguments(tool_name, question.args),
    signal,
  );
  if (isBlocked(outcome, "deny"))
    return { behavior: "deny", reason: decisionReason(outcome, ["deny"], "denied"), decided_by: "handler" };
  const asked = outcome.decisions.some((d) => d.action === "ask");
  if (!asked && outcome.decisions.some((d) => d.action === "allow"))
    return {
      behavior: "allow",
      reason: decisionReason(outcome, ["allow"], "allowed"),
      decided_by: "handler",
    };

  const approval_id = randomUUID();
  deps.events.emit(
    RuntimeEvent.TOOL_APPROVAL_REQUESTED,
    { approval_id, tool_name, safety_level },
    correlation,
  );
  const answer = await deps.approve(
    { approval_id, tool_name, safety_level, detail, correlation },
    { timeoutMs: deps.approvalTimeoutMs, signal },
  );
  if (answer.source !== "approver") {
    deps.events.emit(
      RuntimeEvent.APPROVAL_TRANSITION,
      { approval_id, tool_name, decision: "none", source: answer.source },
      correlation,
    );
    return { behavior: "none", reason: answer.reason };
  }
  deps.events.emit(
    RuntimeEvent.APPROVAL_TRANSITION,
    { approval_id, tool_name, decision: answer.decision, approver: answer.approver, source: answer.source },
    correlation,
  );
  const why = answer.reason ?? "no reason given";
  return answer.decision === "allow"
    ? { behavior: "allow", reason: `approved by ${answer.approver}: ${why}`, decided_by: "approver" }
    : { behavior: "deny", reason: `approval denied by ${answer.approver}: ${why}`, decided_by: "approver" };
}
