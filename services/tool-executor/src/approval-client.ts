import { metrics, RequestFailedError, requestJson } from "@geode/bus";
import { type ApprovalReply, ApprovalReplySchema, type ApprovalRequest, type Names } from "@geode/contracts";
import type { NatsConnection } from "@nats-io/transport-node";

export interface ApprovalAnswer extends ApprovalReply {
  /** `approver` answered, or why nobody did (`no_approver`, `timeout`, `invalid_reply`). */
  source: "approver" | "no_approver" | "timeout" | "invalid_reply";
}

/**
 * Asks a human on `{ns}.approval.request` (queue group `approvers`; the first reply wins). No
 * approver, no answer in time, or a malformed answer is a deny: headless runs fail closed.
 */
export async function requestApproval(
  nc: NatsConnection,
  n: Names,
  request: ApprovalRequest,
  timeoutMs: number,
): Promise<ApprovalAnswer> {
  metrics().approvalPending(1);
  try {
    const body = await requestJson(nc, n.approvalRequest, request, { timeoutMs: Math.max(1, timeoutMs) });
    const parsed = ApprovalReplySchema.safeParse(body);
    if (!parsed.success)
      return {
        decision: "deny",
        approver: "none",
        reason: "invalid approver reply",
        source: "invalid_reply",
      };
    return { ...parsed.data, source: "approver" };
  } catch (err) {
    if (err instanceof RequestFailedError && err.failure === "no_responders")
      return { decision: "deny", approver: "none", reason: "no approver available", source: "no_approver" };
    if (err instanceof RequestFailedError && err.failure === "timeout")
      return {
        decision: "deny",
        approver: "none",
        reason: `no approval within ${timeoutMs} ms`,
        source: "timeout",
      };
    return { decision: "deny", approver: "none", reason: "approval request failed", source: "invalid_reply" };
  } finally {
    metrics().approvalPending(-1);
  }
}
