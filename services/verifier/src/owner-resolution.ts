import {
  type BuiltInResult,
  ErrorCode,
  correlation as fillCorrelation,
  GeodeError,
  type PolicyAction,
  type TurnRecord,
  type VerifyReply,
  VerifyResolveLeg,
} from "@geode/contracts";
import { totalsOf } from "@geode/state";
import {
  continuedEntry,
  decidedEntry,
  evidenceEntry,
  publishTimeline,
} from "./stages/verification-timeline.js";
import { verifyReply } from "./stages/verify-reply.js";
import type { VerifierDeps } from "./stages/verify-run.js";
import { decisionRecord } from "./verification-policy.js";

const invalid = (message: string) => new GeodeError(ErrorCode.InvalidRequest, message);

/** The built-in result a parked attempt without one reports (never reached by a decided attempt). */
const NO_BUILT_IN: BuiltInResult = {
  passed: false,
  mode: "rule_based",
  score: 0,
  rubric_misses: [],
  should_retry: false,
};

/**
 * `{ns}.verify.resolve`: the external owner of a parked candidate delivers it (`accept`, the text
 * in the reply) or sends the runtime back with an instruction (`revise`). The session is active
 * again; the resolution is recorded like a decision of the `owner`.
 */
export async function resolveParked(deps: VerifierDeps, body: unknown): Promise<VerifyReply> {
  const request = VerifyResolveLeg.request.decode(body);
  const { session_id: sessionId, turn_id: turnId } = request.correlation;
  const instruction = request.instruction?.trim() ? request.instruction : undefined;
  if (request.action === "revise" && instruction === undefined)
    throw invalid("revise requires an instruction");
  const { before, after } = await settleParkedTurn(deps, sessionId, turnId, request.action);
  const pending = before.pending!;
  const builtIn = after.attempts.find((a) => a.attempt === pending.attempt)?.built_in ?? NO_BUILT_IN;
  const evidence = before.final?.evidence_refs ?? [];
  const totals = totalsOf(after);
  await deps.sessions.unpause(sessionId);
  const correlation = fillCorrelation({ ...request.correlation, verify_attempt: pending.attempt });
  const action: PolicyAction = request.action === "deliver" ? "accept" : "revise";
  const owner = decisionRecord(
    "resolve",
    { handler: "owner", action: request.action, reason: "external owner resolution", instruction },
    [],
  );
  const at = { turnId, attempt: pending.attempt, candidateSha: pending.candidate_sha256, action };
  await publishTimeline(deps.events, correlation, [
    decidedEntry({ ...at, builtIn, decisions: [owner], extra: { resolved: pending.policy_action } }),
    action === "revise"
      ? continuedEntry({ ...at, nextAttempt: after.attempts.length, instruction })
      : evidenceEntry({
          ...at,
          evidence,
          totals,
          checkpoint: { bucket: deps.names.buckets.verify, key: deps.attempts.key(sessionId, turnId) },
        }),
  ]);
  return verifyReply({
    action,
    attempt: pending.attempt,
    builtIn,
    totals,
    candidateSha: pending.candidate_sha256,
    evidence,
    instruction: action === "revise" ? instruction : undefined,
    pendingText: action === "accept" ? pending.text : undefined,
  });
}

/**
 * Takes the parked candidate off the turn (revision-checked): delivered with the owner's final
 * checkpoint, or open again for the revision. A turn that is not parked is refused.
 */
async function settleParkedTurn(
  deps: VerifierDeps,
  sessionId: string,
  turnId: string,
  resolution: "deliver" | "revise",
): Promise<{ before: TurnRecord; after: TurnRecord }> {
  let before: TurnRecord | null = null;
  const { value } = await deps.attempts.mutate(sessionId, turnId, (current) => {
    if (current?.status !== "parked" || !current.pending)
      throw invalid("this turn is not parked for external verification");
    before = current;
    const now = Date.now();
    const { pending } = current;
    const final =
      resolution === "deliver"
        ? {
            attempt: pending.attempt,
            policy_action: "accept" as const,
            candidate_sha256: pending.candidate_sha256,
            totals: totalsOf(current),
            evidence_refs: current.final?.evidence_refs ?? [],
            decided_at: now,
            resolved_by: "owner" as const,
          }
        : current.final;
    const status = resolution === "deliver" ? ("delivered" as const) : ("open" as const);
    return { ...current, status, pending: null, final, updated_at: now };
  });
  return { before: before as unknown as TurnRecord, after: value as TurnRecord };
}
