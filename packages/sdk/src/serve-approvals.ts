import { type GeodeConnection, type Responder, serveRequests } from "@geode/bus";
import { ApprovalLeg, type ApprovalReply, type ApprovalRequest, QueueGroup } from "@geode/contracts";

/** An approver's answer: `"allow"`, `"deny"`, or the full reply. */
export type ApprovalAnswer =
  | "allow"
  | "deny"
  | { decision: "allow" | "deny"; reason?: string; approver?: string };

export interface ServedApprovals {
  /** Stops answering (requests in flight are answered first). */
  close(): Promise<void>;
}

/** The approval reply for an answer (`approver` unless the answer names its own). */
function approvalReply(answer: ApprovalAnswer, approver: string): ApprovalReply {
  const full = typeof answer === "string" ? { decision: answer } : answer;
  return {
    decision: full.decision === "allow" ? "allow" : "deny",
    approver: full.approver ?? approver,
    ...(full.reason !== undefined ? { reason: full.reason } : {}),
  };
}

/**
 * Answers human-approval requests on `{ns}.approval.request` (queue group `approvers`: one
 * approver of the group gets each request; the first reply wins). A request of the wrong shape is
 * answered `invalid_request` without reaching `decide`; a throw is sent as an error reply, which the
 * executor treats as a deny.
 */
export function serveApprovals(
  conn: GeodeConnection,
  decide: (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>,
  options: { approver?: string } = {},
): ServedApprovals {
  const approver = options.approver ?? "sdk-approver";
  const responder: Responder = serveRequests(
    conn,
    conn.names.approvalRequest,
    { queue: QueueGroup.Approvers, request: ApprovalLeg.request },
    async (request) => ApprovalLeg.reply.encode(approvalReply(await decide(request), approver)),
  );
  return { close: () => responder.drain() };
}
