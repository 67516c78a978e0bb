import type { BuiltInResult, EvidenceRef, PolicyAction, VerifyReply, VerifyTotals } from "@geode/contracts";

/** The reply of `{ns}.verify.finalize` and `{ns}.verify.resolve`; `deliver` is true only for accept. */
export function verifyReply(r: {
  action: PolicyAction;
  attempt: number;
  builtIn: BuiltInResult;
  totals: VerifyTotals;
  candidateSha: string;
  evidence: EvidenceRef[];
  /** Only for revise/continue: reaches the runtime once, as dynamic system context. */
  instruction?: string | undefined;
  /** Only for the owner of a parked candidate (and when the owner delivers it). */
  pendingText?: string | undefined;
}): VerifyReply {
  return {
    policy_action: r.action,
    deliver: r.action === "accept",
    verify_attempt: r.attempt,
    built_in: r.builtIn,
    ...(r.instruction === undefined ? {} : { follow_up_instruction: r.instruction }),
    ...(r.pendingText === undefined ? {} : { pending_text: r.pendingText }),
    totals: r.totals,
    candidate_sha256: r.candidateSha,
    evidence_refs: r.evidence,
  };
}
