export { type PolicyGuard, startPolicyGuard } from "./policy-guard.js";
