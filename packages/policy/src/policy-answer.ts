import type { HookDecision, PolicyMode } from "@geode/contracts";
import type { PolicyDecision, PolicyEvaluation } from "./policy-engine.js";

/** What comes between a decision's reason and the deciding policies' ids. */
const POLICIES_OPEN = " (policy ";
const ID_SEPARATOR = ", ";
/** An audit-mode note: `audit: would <action>: <reason> (policy <ids>)`. */
const AUDIT_NOTE = /^audit: would ([a-z_]+): /;

/** A decision's reason as the agent and the audit see it: the policy's reason and the deciding ids. */
function withPolicies(d: PolicyDecision): string {
  return `${d.reason}${POLICIES_OPEN}${d.policies.join(ID_SEPARATOR)})`;
}

/** The audit's note for what the audited sets would have decided. */
function auditNote(d: PolicyDecision): string {
  return `audit: would ${d.action}: ${withPolicies(d)}`;
}

/** A guard's reason or audit note read back: how it applied, what it did, why, and which policies decided. */
export interface PolicyReason {
  /** `audit` for an audit-mode note (nothing was enforced), else `enforce`. */
  mode: PolicyMode;
  /** Audit mode: the action the audited sets would have taken; null for an enforced reason. */
  would: string | null;
  /** The deciding policy's own reason, without the ids. */
  reason: string;
  /** The deciding policies' ids (`set.id`); [] when the text names none. */
  policies: string[];
}

/**
 * Reads a reason the guard gave (a block's or deny's reason, or an audit-mode note) back into its
 * parts. A reason cut short (the audit keeps 512 characters) keeps the ids it holds whole: an id
 * the cut may have shortened is dropped.
 */
export function parsePolicyReason(text: string): PolicyReason {
  const audit = AUDIT_NOTE.exec(text);
  const rest = audit ? text.slice(audit[0].length) : text;
  const mode: PolicyMode = audit ? "audit" : "enforce";
  const would = audit?.[1] ?? null;
  const at = rest.lastIndexOf(POLICIES_OPEN);
  if (at < 0) return { mode, would, reason: rest, policies: [] };
  const list = rest.slice(at + POLICIES_OPEN.length);
  const whole = list.endsWith(")");
  const ids = (whole ? list.slice(0, -1) : list).split(ID_SEPARATOR);
  if (!whole) ids.pop();
  const policies = ids.filter((id) => /^[a-z0-9][a-z0-9_-]{0,63}\.[^\s,()]+$/.test(id));
  return { mode, would, reason: rest.slice(0, at), policies };
}

/** What the guard answers for one evaluation: a decision, and a note for the audit. */
export interface PolicyAnswer {
  decision: HookDecision | null;
  /**
   * Which policies decided, for the audit (never payload text): an enforced ask's reason (the
   * audit would otherwise say only `ok`), or in audit mode what would have happened.
   */
  auditReason?: string;
}

/**
 * The hook decision of an evaluation: the enforced sets' block, deny or ask; otherwise no decision
 * (a permit never grants anything), with the audited sets' would-be decision as the audit's note.
 */
export function policyAnswer(evaluation: PolicyEvaluation): PolicyAnswer {
  const { enforce, audit } = evaluation;
  if (enforce.action !== null) {
    const reason = withPolicies(enforce);
    const stops = enforce.action === "block" || enforce.action === "deny";
    return { decision: { action: enforce.action, reason }, ...(stops ? {} : { auditReason: reason }) };
  }
  if (audit.action !== null) return { decision: null, auditReason: auditNote(audit) };
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
      reason: auditNote(audit),
    };
  return { blocked: false, decision: null, policies: [], reason: "" };
}
