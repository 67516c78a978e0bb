export {
  compileRubric,
  DELIVERABLE_TERMINATIONS,
  defaultRevisionInstruction,
  runBuiltInVerifier,
} from "./built-in-verifier.js";
export {
  applyBudget,
  MAX_CONSECUTIVE_REVISIONS,
  postVerifyPolicy,
  RUNTIME_DEFAULT,
  stopPolicy,
} from "./verification-policy.js";
export {
  CANDIDATE_SUMMARY_CHARS,
  candidateSummary,
  type RunningVerifier,
  startVerifier,
  type VerifierOptions,
} from "./verifier.js";
