export { type PolicyGuard, type PolicyGuardOptions, startPolicyGuard } from "./policy-guard.js";
