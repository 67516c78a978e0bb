import type { GeodeConnection } from "@geode/bus";
import type { ApprovalRequest, ConsoleApproval } from "@geode/contracts";
import { type ServedApprovals, serveApprovals } from "@geode/sdk";
import { ApiError } from "./http-io.js";

/** An approval request waiting for an operator of the console (`GET /api/approvals`). */
export type PendingApproval = ConsoleApproval;

export interface ApprovalAnswer {
  decision: "allow" | "deny";
  reason: string;
  operator: string;
}

interface Waiting {
  request: PendingApproval;
  answer: (a: ApprovalAnswer) => void;
  timer: NodeJS.Timeout;
}

/**
 * The console as one of the approvers (queue group `approvers` on `{ns}.approval.request`): each
 * request it receives waits here until an operator answers it from the page or the API, or until
 * the executor's approval timeout passes (then it is dropped; the executor has denied it already).
 * The reply names the operator as `approver`, so the executor's `approval_transition` event records
 * who decided. At most `max` wait at once; beyond that a request is denied at once.
 */
export class PendingApprovals {
  private readonly waiting = new Map<string, Waiting>();
  private readonly served: ServedApprovals;

  constructor(
    conn: GeodeConnection,
    private readonly options: {
      timeoutMs: number;
      max?: number;
      /** The agent and kind of a session (KV `{ns}_sessions`), shown beside its request. */
      agentOf?: (sessionId: string) => Promise<{ agent: string | null; agent_kind: string | null }>;
    },
  ) {
    this.served = serveApprovals(conn, (req) => this.hold(req), { approver: "console" });
  }

  /** Pending requests, oldest first. */
  list(): PendingApproval[] {
    return [...this.waiting.values()].map((w) => w.request);
  }

  /** Answers one pending request; a request that is not (or no longer) pending is a 404. */
  answer(approvalId: string, answer: ApprovalAnswer): PendingApproval {
    const w = this.waiting.get(approvalId);
    if (!w)
      throw new ApiError(
        404,
        "invalid_request",
        `approval ${approvalId} is not pending (answered or expired)`,
      );
    this.waiting.delete(approvalId);
    clearTimeout(w.timer);
    w.answer(answer);
    return w.request;
  }

  /** Stops taking requests; those still pending are denied. */
  async close(): Promise<void> {
    for (const [id, w] of this.waiting) {
      clearTimeout(w.timer);
      w.answer({ decision: "deny", reason: "the console stopped", operator: "console" });
      this.waiting.delete(id);
    }
    await this.served.close();
  }

  private async hold(req: ApprovalRequest) {
    const received = Date.now();
    const max = this.options.max ?? 500;
    if (this.waiting.size >= max || this.waiting.has(req.approval_id))
      return { decision: "deny" as const, reason: "the console has too many pending approvals" };
    const session = req.correlation.session_id;
    const { agent, agent_kind } =
      session && this.options.agentOf
        ? await this.options.agentOf(session).catch(() => ({ agent: null, agent_kind: null }))
        : { agent: null, agent_kind: null };
    if (this.waiting.has(req.approval_id))
      return { decision: "deny" as const, reason: "the console has too many pending approvals" };
    return new Promise<{ decision: "allow" | "deny"; reason: string; approver: string }>((resolve) => {
      const timer = setTimeout(
        () => {
          this.waiting.delete(req.approval_id);
          resolve({ decision: "deny", reason: "no operator answered in time", approver: "console" });
        },
        Math.max(0, received + this.options.timeoutMs - Date.now()),
      );
      timer.unref();
      this.waiting.set(req.approval_id, {
        request: {
          approval_id: req.approval_id,
          tool_name: req.tool_name,
          safety_level: req.safety_level,
          detail: req.detail,
          correlation: req.correlation,
          received_at: received,
          expires_at: received + this.options.timeoutMs,
          agent,
          agent_kind,
          policies: [],
          policy_reason: null,
        },
        answer: (a) => resolve({ decision: a.decision, reason: a.reason, approver: a.operator }),
        timer,
      });
    });
  }
}
