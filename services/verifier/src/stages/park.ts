import type { PolicyAction, TurnRecord } from "@geode/contracts";
import { PAUSE_REASON } from "@geode/state";
import type { TimelineEntry } from "./verification-timeline.js";
import type { VerifyRun } from "./verify-run.js";

/**
 * The delivery gate: escalate, escalate_budget_exhausted and built_in_fail park the candidate for
 * its external owner. The turn record keeps the candidate text (and only there) as `pending`; the
 * session is paused with reason `external_verification_required` (created if absent, never an
 * ended one revived); no SessionEnd follows. `{ns}.verify.resolve` lets the owner deliver or revise.
 */
export function parkTurn(record: TurnRecord, run: VerifyRun, action: PolicyAction): TurnRecord {
  return {
    ...record,
    status: "parked",
    pending: {
      attempt: run.attempt,
      text: run.request.candidate.text,
      candidate_sha256: run.candidateSha,
      policy_action: action,
    },
  };
}

/** Pauses the session for the owner of its parked candidate. */
export async function pauseForOwner(run: VerifyRun): Promise<void> {
  await run.deps.sessions.pause(run.correlation);
}

/** `verification.pending`: a candidate waits for its owner. */
export function pendingEntry(run: VerifyRun, action: PolicyAction): TimelineEntry {
  return {
    kind: "verification.pending",
    payload: {
      root_turn: run.turnId,
      verify_attempt: run.attempt,
      policy_action: action,
      candidate_sha256: run.candidateSha,
      reason: PAUSE_REASON,
    },
  };
}
