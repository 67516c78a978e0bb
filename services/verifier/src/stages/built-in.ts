import type { BuiltInResult } from "@geode/contracts";
import { runBuiltInVerifier } from "../built-in-verifier.js";
import type { PreVerified } from "./pre-verify.js";
import type { VerifyRun } from "./verify-run.js";

/** The verify fields PostVerify and Stop receive. */
interface VerifyFields {
  passed: boolean;
  mode: string;
  score: number;
  rubric_misses: string[];
  termination_reason: string;
  rounds: number;
  tool_call_count: number;
  candidate_summary: string;
  effective_mode: string;
  should_retry: boolean;
}

export interface BuiltInChecked {
  result: BuiltInResult;
  fields: VerifyFields;
}

/** The built-in verifier (`rule_based` or `off`) on the candidate, PreVerify's misses added. */
export function builtIn(run: VerifyRun, pre: PreVerified): BuiltInChecked {
  const result = runBuiltInVerifier({
    text: run.request.candidate.text,
    termination_reason: run.request.candidate.termination_reason,
    mode: run.mode,
    rubric: run.rubric,
    additionalMisses: pre.additionalMisses,
  });
  return {
    result,
    fields: {
      passed: result.passed,
      mode: run.mode,
      score: result.score,
      rubric_misses: result.rubric_misses,
      ...run.facts,
      effective_mode: run.mode,
      should_retry: result.should_retry,
    },
  };
}
