import type { HookDecision } from "@geode/contracts";
import type { PolicyDecision, PolicyEvaluation } from "./policy-engine.js";

/** A decision's reason as the agent and the audit see it: the policy's reason and the deciding ids. */
function withPolicies(d: PolicyDecision): string {
  return `${d.reason} (policy ${d.policies.join(", ")})`;
}

/** What the guard answers for one evaluation: a decision, and a note for the audit when it has none. */
export interface PolicyAnswer {
  decision: HookDecision | null;
  /** Audit mode: what would have happened and which policies decided (never payload text). */
  auditReason?: string;
}

/**
 * The hook decision of an evaluation: the enforced sets' block, deny or ask; otherwise no decision
 * (a permit never grants anything), with the audited sets' would-be decision as the audit's note.
 */
export function policyAnswer(evaluation: PolicyEvaluation): PolicyAnswer {
  const { enforce, audit } = evaluation;
  if (enforce.action !== null) return { decision: { action: enforce.action, reason: withPolicies(enforce) } };
  if (audit.action !== null)
    return { decision: null, auditReason: `audit: would ${audit.action}: ${withPolicies(audit)}` };
  return { decision: null };
}

/** `geode policy test --json`: `{blocked, decision, policies, reason}`. */
export interface PolicyTestResult {
  blocked: boolean;
  decision: PolicyDecision["action"];
  policies: string[];
  reason: string;
}

/** The result of `geode policy test`: the enforced decision, else the audited one (as `audit: would …`). */
export function policyTestResult(evaluation: PolicyEvaluation): PolicyTestResult {
  const { enforce, audit } = evaluation;
  if (enforce.action !== null)
    return {
      blocked: enforce.action === "block" || enforce.action === "deny",
      decision: enforce.action,
      policies: enforce.policies,
      reason: withPolicies(enforce),
    };
  if (audit.action !== null)
    return {
      blocked: false,
      decision: null,
      policies: audit.policies,
      reason: `audit: would ${audit.action}: ${withPolicies(audit)}`,
    };
  return { blocked: false, decision: null, policies: [], reason: "" };
}
