import { type DispatchOutcome, HookName } from "@geode/contracts";
import { applyBudget, type PolicyResult, postVerifyPolicy } from "../verification-policy.js";
import type { BuiltInChecked } from "./built-in.js";
import type { VerifyRun } from "./verify-run.js";

export interface PostVerified {
  outcome: DispatchOutcome;
  /** The composed decision, the revision budget applied. */
  policy: PolicyResult;
}

/**
 * PostVerify, then its composition (no decision: pass → accept, retryable failure → revise, other
 * failure → escalate; with decisions: escalate wins, a hook cannot turn a failure into a pass) and
 * the revision budget (a revise at attempt 2 or later becomes `escalate_budget_exhausted`).
 */
export async function postVerify(run: VerifyRun, checked: BuiltInChecked): Promise<PostVerified> {
  const outcome = await run.deps.invoke(HookName.PostVerify, checked.fields, run.correlation);
  const policy = applyBudget(
    postVerifyPolicy(checked.result, outcome.decisions, outcome.blocked),
    run.attempt,
  );
  return { outcome, policy };
}
