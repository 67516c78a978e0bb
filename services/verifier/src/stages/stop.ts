import { type AttributedDecision, type DispatchOutcome, type EvidenceRef, HookName } from "@geode/contracts";
import { collectEvidence, type PolicyResult, stopPolicy } from "../verification-policy.js";
import type { BuiltInChecked } from "./built-in.js";
import type { PostVerified } from "./post-verify.js";
import type { PreVerified } from "./pre-verify.js";
import type { VerifyRun } from "./verify-run.js";

export interface Stopped {
  outcome: DispatchOutcome;
  /** The final decision: PostVerify's, or `continue` (budget applied) when Stop asked for one. */
  result: PolicyResult;
  /** Stop decisions not applied (a continue after an escalation). */
  ignored: AttributedDecision[];
  /** Evidence of every decision, deduplicated, at most 32. */
  evidence: EvidenceRef[];
}

/**
 * Stop sees the policy action and the evidence so far; `finalize` keeps the decision, `continue`
 * (with an instruction) turns an accept or revise into a continue, but never an escalation.
 */
export async function stop(
  run: VerifyRun,
  pre: PreVerified,
  checked: BuiltInChecked,
  post: PostVerified,
): Promise<Stopped> {
  const before = collectEvidence([...pre.outcome.decisions, ...post.outcome.decisions]);
  const outcome = await run.deps.invoke(
    HookName.Stop,
    { ...checked.fields, policy_action: post.policy.action, evidence_refs: before },
    run.correlation,
  );
  const { result, ignored } = stopPolicy(post.policy, outcome.decisions, run.attempt);
  const evidence = collectEvidence([
    ...pre.outcome.decisions,
    ...post.outcome.decisions,
    ...outcome.decisions,
  ]);
  return { outcome, result, ignored, evidence };
}
