import { type Responder, serveRequests } from "@geode/bus";
import {
  type ApprovalReply,
  type ApprovalRequest,
  ApprovalRequestSchema,
  ErrorCode,
  parseOrThrow,
  QueueGroup,
} from "@geode/contracts";
import type { GeodeConnection } from "./connection.js";

/** An approver's answer: `"allow"`, `"deny"`, or the full reply. */
export type ApprovalAnswer =
  | "allow"
  | "deny"
  | { decision: "allow" | "deny"; reason?: string; approver?: string };

export interface ServedApprovals {
  /** Stops answering (requests in flight are answered first). */
  close(): Promise<void>;
}

/**
 * Answers human-approval requests on `{ns}.approval.request` (queue group `approvers`: one
 * approver of the group gets each request; the first reply wins). A throw is sent as an error
 * reply, which the executor treats as a deny.
 */
export function serveApprovals(
  conn: GeodeConnection,
  decide: (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>,
  options: { approver?: string } = {},
): ServedApprovals {
  const approver = options.approver ?? "sdk-approver";
  const responder: Responder = serveRequests(
    conn.nc,
    conn.names.approvalRequest,
    { queue: QueueGroup.Approvers },
    async (body): Promise<ApprovalReply> => {
      const request = parseOrThrow(ApprovalRequestSchema, body, ErrorCode.InvalidRequest);
      const answer = await decide(request);
      const full = typeof answer === "string" ? { decision: answer } : answer;
      return {
        decision: full.decision === "allow" ? "allow" : "deny",
        approver: full.approver ?? approver,
        ...(full.reason !== undefined ? { reason: full.reason } : {}),
      };
    },
  );
  return { close: () => responder.drain() };
}
