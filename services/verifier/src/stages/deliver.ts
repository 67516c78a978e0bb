import {
  type AttributedDecision,
  type DispatchOutcome,
  RuntimeEvent,
  type TurnRecord,
  type VerifyReply,
} from "@geode/contracts";
import { newTurnRecord, totalsOf } from "@geode/state";
import { type DecisionRecord, decisionRecord, isParked } from "../verification-policy.js";
import type { BuiltInChecked } from "./built-in.js";
import { parkTurn, pauseForOwner, pendingEntry } from "./park.js";
import type { PostVerified } from "./post-verify.js";
import type { PreVerified } from "./pre-verify.js";
import type { Stopped } from "./stop.js";
import {
  continuedEntry,
  decidedEntry,
  evidenceEntry,
  publishTimeline,
  type TimelineEntry,
} from "./verification-timeline.js";
import { verifyReply } from "./verify-reply.js";
import type { VerifyRun } from "./verify-run.js";

/** What the stages before deliver found. */
export interface Decided {
  pre: PreVerified;
  checked: BuiltInChecked;
  post: PostVerified;
  stop: Stopped;
}

/**
 * Deliver: the decision is recorded on the root turn (its attempt decided; for accept or a parked
 * action the final checkpoint, rounds, tool calls and usage summed over the attempts, and the
 * evidence), a parked candidate goes to its owner (see park.ts), the timeline and
 * `turn_verify_passed|failed` are stored, and the runtime gets the reply: the revision instruction
 * only for revise/continue, the candidate text only to the owner of a parked one.
 */
export async function deliver(run: VerifyRun, decided: Decided): Promise<VerifyReply> {
  const { deps } = run;
  const { action, instruction } = decided.stop.result;
  const parked = isParked(action);
  const { value } = await deps.attempts.mutate(run.sessionId, run.turnId, (current) =>
    decidedTurn(current, run, decided),
  );
  const totals = totalsOf(value as TurnRecord);
  if (parked) await pauseForOwner(run);
  const builtIn = decided.checked.result;
  await Promise.all([
    publishTimeline(deps.events, run.correlation, timelineOf(run, decided, totals)),
    deps.events.emit(
      action === "accept" ? RuntimeEvent.TURN_VERIFY_PASSED : RuntimeEvent.TURN_VERIFY_FAILED,
      {
        verify_attempt: run.attempt,
        policy_action: action,
        passed: builtIn.passed,
        mode: builtIn.mode,
        score: builtIn.score,
        rubric_misses: builtIn.rubric_misses,
        candidate_sha256: run.candidateSha,
      },
      run.correlation,
    ),
  ]);
  deps.log.info(
    { session_id: run.sessionId, turn_id: run.turnId, verify_attempt: run.attempt, policy_action: action },
    "verification decided",
  );
  const loops = action === "revise" || action === "continue";
  return verifyReply({
    action,
    attempt: run.attempt,
    builtIn,
    totals,
    candidateSha: run.candidateSha,
    evidence: decided.stop.evidence,
    instruction: loops ? instruction : undefined,
    pendingText: parked ? run.request.candidate.text : undefined,
  });
}

/** The root turn with this attempt decided, and its final checkpoint or parked candidate. */
function decidedTurn(current: TurnRecord | null, run: VerifyRun, decided: Decided): TurnRecord {
  const now = Date.now();
  const { action } = decided.stop.result;
  const record = current ?? newTurnRecord(run.sessionId, run.turnId, now);
  const next: TurnRecord = {
    ...record,
    attempts: record.attempts.map((a) =>
      a.attempt === run.attempt
        ? {
            ...a,
            state: "decided" as const,
            policy_action: action,
            built_in: decided.checked.result,
            decided_at: now,
          }
        : a,
    ),
    updated_at: now,
  };
  if (action !== "accept" && !isParked(action)) return next;
  next.final = {
    attempt: run.attempt,
    policy_action: action,
    candidate_sha256: run.candidateSha,
    totals: totalsOf(next),
    evidence_refs: decided.stop.evidence,
    decided_at: now,
    resolved_by: "verifier",
  };
  return action === "accept" ? { ...next, status: "delivered" } : parkTurn(next, run, action);
}

/** Every decision as the timeline records it; the runtime's own fallback when PostVerify had none. */
export function decisionRecords(decided: Decided): DecisionRecord[] {
  const { post } = decided;
  const of = (surface: "PreVerify" | "PostVerify" | "Stop", outcome: DispatchOutcome) =>
    outcome.decisions.map((d: AttributedDecision) => decisionRecord(surface, d, d.evidence_refs ?? []));
  const postRecords =
    post.outcome.decisions.length > 0 || !post.policy.fallback
      ? of("PostVerify", post.outcome)
      : [post.policy.fallback];
  return [...of("PreVerify", decided.pre.outcome), ...postRecords, ...of("Stop", decided.stop.outcome)];
}

function timelineOf(run: VerifyRun, decided: Decided, totals: ReturnType<typeof totalsOf>): TimelineEntry[] {
  const { action, instruction } = decided.stop.result;
  const handlerErrors = [decided.pre, decided.post, decided.stop].reduce(
    (n, s) => n + s.outcome.handler_errors.length,
    0,
  );
  const entries = [
    decidedEntry({
      turnId: run.turnId,
      attempt: run.attempt,
      candidateSha: run.candidateSha,
      builtIn: decided.checked.result,
      action,
      decisions: decisionRecords(decided),
      extra: {
        ignored_decisions: decided.stop.ignored.map((d) => ({
          surface: "Stop",
          handler: d.handler,
          action: d.action,
        })),
        handler_error_count: handlerErrors,
      },
    }),
  ];
  if (action === "revise" || action === "continue")
    entries.push(
      continuedEntry({
        turnId: run.turnId,
        attempt: run.attempt,
        nextAttempt: run.attempt + 1,
        action,
        instruction,
      }),
    );
  if (isParked(action)) entries.push(pendingEntry(run, action));
  if (action === "accept" || isParked(action))
    entries.push(
      evidenceEntry({
        turnId: run.turnId,
        attempt: run.attempt,
        action,
        candidateSha: run.candidateSha,
        evidence: decided.stop.evidence,
        totals,
        checkpoint: {
          bucket: run.deps.names.buckets.verify,
          key: run.deps.attempts.key(run.sessionId, run.turnId),
        },
      }),
    );
  return entries;
}
