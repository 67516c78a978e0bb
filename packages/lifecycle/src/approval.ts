import { type GeodeConnection, RequestFailedError, requestJson } from "@geode/bus";
import { ApprovalLeg, type ApprovalReply, type ApprovalRequest, isMalformedReply } from "@geode/contracts";

/** A human approver's answer, or why there was none. */
export type ApprovalAnswer =
  | (ApprovalReply & { source: "approver" })
  | { source: "no_approver" | "timeout" | "invalid_reply" | "error"; reason: string };

/**
 * Asks a human on `{ns}.approval.request` (queue group `approvers`; the first reply wins) and says
 * who answered, or why nobody did. What no answer means is the caller's rule: the tool-executor
 * denies (headless runs fail closed), the agent gateway leaves the question to the agent's own user.
 * `options.pending` is told when the request starts (+1) and ends (-1): a service's
 * `ServiceObserver.approvalPending`.
 */
export async function requestApproval(
  conn: GeodeConnection,
  request: ApprovalRequest,
  options: {
    timeoutMs: number;
    signal?: AbortSignal | undefined;
    pending?: ((delta: 1 | -1) => void) | undefined;
  },
): Promise<ApprovalAnswer> {
  const timeoutMs = Math.max(1, options.timeoutMs);
  options.pending?.(1);
  try {
    const reply = await requestJson(conn, conn.names.approvalRequest, ApprovalLeg.request.encode(request), {
      timeoutMs,
      signal: options.signal,
      reply: ApprovalLeg.reply,
    });
    return { ...reply, source: "approver" };
  } catch (err) {
    if (options.signal?.aborted) throw err;
    if (isMalformedReply(err)) return { source: "invalid_reply", reason: "invalid approver reply" };
    if (err instanceof RequestFailedError && err.failure === "no_responders")
      return { source: "no_approver", reason: "no approver available" };
    if (err instanceof RequestFailedError && err.failure === "timeout")
      return { source: "timeout", reason: `no approval within ${timeoutMs} ms` };
    return { source: "error", reason: "approval request failed" };
  } finally {
    options.pending?.(-1);
  }
}
