// Cedar policies of the GEODE extension plane (docs/policies.md): the shipped schema and packs,
// write-time checks, and the evaluation of one hook call, for the policy-guard and `geode policy`.
export {
  type PolicyAnswer,
  type PolicyReason,
  type PolicyTestResult,
  parsePolicyReason,
  policyAnswer,
  policyTestResult,
} from "./policy-answer.js";
export { checkPolicyBounds, MAX_POLICY_DEPTH } from "./policy-bounds.js";
export { type PolicyDecision, PolicyEngine, type PolicyEvaluation } from "./policy-engine.js";
export { packNames, packSummary, packText, policiesDir, schemaText } from "./policy-files.js";
export {
  checkStoredPolicy,
  type PolicySetInForce,
  policySetsInForce,
  type RefusedPolicyVersion,
  type StoredPolicyVersion,
} from "./policy-in-force.js";
export {
  type CallerIdentity,
  cedarRequests,
  isPolicyHook,
  MAX_PATHS_EVALUATED,
  POLICY_HOOKS,
  type PolicyHook,
  registeredToolApplies,
  type TrustedFacts,
} from "./policy-request.js";
export {
  type CompiledPolicy,
  type CompiledSet,
  checkPolicySet,
  compilePolicySet,
  validatePolicyText,
} from "./policy-set.js";
