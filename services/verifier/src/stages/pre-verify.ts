import { type DispatchOutcome, HookName } from "@geode/contracts";
import type { VerifyRun } from "./verify-run.js";

export interface PreVerified {
  outcome: DispatchOutcome;
  /** `strengthen` misses, in chain order: extra failed checks for the built-in verifier. */
  additionalMisses: string[];
}

/**
 * PreVerify: handlers may only add requirements. Their `strengthen` misses are merged into the
 * built-in result, which then fails (retryably).
 */
export async function preVerify(run: VerifyRun): Promise<PreVerified> {
  const outcome = await run.deps.invoke(
    HookName.PreVerify,
    { ...run.facts, mode: run.mode },
    run.correlation,
  );
  const additionalMisses = outcome.decisions
    .filter((d) => d.action === "strengthen")
    .flatMap((d) => d.additional_misses ?? []);
  return { outcome, additionalMisses };
}
