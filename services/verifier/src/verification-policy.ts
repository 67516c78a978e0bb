import type { AttributedDecision, BuiltInResult, EvidenceRef, PolicyAction } from "@geode/contracts";
import { MAX_EVIDENCE_REFS, sha256 } from "@geode/contracts";
import { defaultRevisionInstruction } from "./built-in-verifier.js";

/** Revise/continue is allowed while the attempt number (from 0) is below this. */
export const MAX_CONSECUTIVE_REVISIONS = 2;

/** The handler name of the runtime's own fallback decision. */
export const RUNTIME_DEFAULT = "runtime_default";

export type VerifySurface = "PreVerify" | "PostVerify" | "Stop" | "resolve";

/** One decision as the timeline records it: never the instruction text, only its digest and size. */
export interface DecisionRecord {
  surface: VerifySurface;
  handler: string;
  action: string;
  reason: string;
  instruction_sha256: string | null;
  instruction_bytes: number;
  evidence_refs: EvidenceRef[];
}

export function decisionRecord(
  surface: VerifySurface,
  d: { handler: string; action: string; reason?: string | undefined; instruction?: string | undefined },
  evidence: EvidenceRef[] = [],
): DecisionRecord {
  return {
    surface,
    handler: d.handler,
    action: d.action,
    reason: d.reason ?? "",
    instruction_sha256: d.instruction === undefined ? null : sha256(d.instruction),
    instruction_bytes: d.instruction === undefined ? 0 : Buffer.byteLength(d.instruction, "utf8"),
    evidence_refs: evidence,
  };
}

export interface PolicyResult {
  action: PolicyAction;
  instruction?: string;
  /** The fallback decision when no handler decided (recorded as `runtime_default`). */
  fallback?: DecisionRecord;
}

const joinInstructions = (list: (string | undefined)[]): string | undefined => {
  const distinct = [...new Set(list.filter((s): s is string => !!s && s.trim() !== ""))];
  return distinct.length === 0 ? undefined : distinct.join("\n\n");
};

/**
 * PostVerify composition (docs/protocol.md#verification). No decision: pass → accept, retryable failure → revise with
 * the default instruction, other failure → escalate. With decisions: any escalate, an accept of a
 * failed built-in result, or a blocked outcome (a `failure_mode: closed` guard failed) → escalate;
 * else any revise → revise with the revise instructions (joined, in chain order); else accept if
 * passed, otherwise built_in_fail.
 */
export function postVerifyPolicy(
  builtIn: BuiltInResult,
  decisions: readonly AttributedDecision[],
  blocked = false,
): PolicyResult {
  if (decisions.length === 0 && !blocked) {
    if (builtIn.passed)
      return {
        action: "accept",
        fallback: decisionRecord("PostVerify", {
          handler: RUNTIME_DEFAULT,
          action: "accept",
          reason: "built-in verification passed",
        }),
      };
    if (builtIn.should_retry) {
      const instruction = defaultRevisionInstruction(builtIn);
      return {
        action: "revise",
        instruction,
        fallback: decisionRecord("PostVerify", {
          handler: RUNTIME_DEFAULT,
          action: "revise",
          reason: "retryable built-in failure",
          instruction,
        }),
      };
    }
    return {
      action: "escalate",
      fallback: decisionRecord("PostVerify", {
        handler: RUNTIME_DEFAULT,
        action: "escalate",
        reason: "built-in failure that a retry cannot fix",
      }),
    };
  }
  const escalate =
    blocked ||
    decisions.some((d) => d.action === "escalate" || d.action === "block") ||
    (!builtIn.passed && decisions.some((d) => d.action === "accept"));
  if (escalate) return { action: "escalate" };
  const revises = decisions.filter((d) => d.action === "revise");
  if (revises.length > 0) {
    const instruction = joinInstructions(revises.map((d) => d.instruction));
    return instruction === undefined ? { action: "revise" } : { action: "revise", instruction };
  }
  return { action: builtIn.passed ? "accept" : "built_in_fail" };
}

/** Actions that park the candidate for its external owner (the delivery gate). */
const PARKED_ACTIONS: ReadonlySet<PolicyAction> = new Set([
  "escalate",
  "escalate_budget_exhausted",
  "built_in_fail",
]);

export function isParked(action: PolicyAction): boolean {
  return PARKED_ACTIONS.has(action);
}

/** True for a decision the budget applies to. */
const loops = (action: PolicyAction) => action === "revise" || action === "continue";

/** A revise or continue decided at attempt 2 or later becomes `escalate_budget_exhausted`. */
export function applyBudget(result: PolicyResult, attempt: number): PolicyResult {
  if (loops(result.action) && attempt >= MAX_CONSECUTIVE_REVISIONS) {
    const { instruction: _dropped, ...rest } = result;
    return { ...rest, action: "escalate_budget_exhausted" };
  }
  return result;
}

interface StopResult {
  result: PolicyResult;
  /** Stop decisions that were not applied (a continue after an escalation). */
  ignored: AttributedDecision[];
}

/**
 * Stop composition: `finalize` keeps the policy; `continue` (with its instruction) turns an accept
 * or revise into `continue` (instructions joined), except after an escalation, where it is ignored.
 * The budget is applied to the result.
 */
export function stopPolicy(current: PolicyResult, decisions: readonly AttributedDecision[], attempt: number) {
  const continues = decisions.filter((d) => d.action === "continue");
  if (continues.length === 0) return { result: current, ignored: [] } satisfies StopResult;
  if (isParked(current.action)) return { result: current, ignored: continues } satisfies StopResult;
  const instruction = joinInstructions([current.instruction, ...continues.map((d) => d.instruction)]);
  const next: PolicyResult = { action: "continue", ...(instruction === undefined ? {} : { instruction }) };
  if (current.fallback) next.fallback = current.fallback;
  return { result: applyBudget(next, attempt), ignored: [] } satisfies StopResult;
}

/** Evidence references of every decision, deduplicated, at most 32. */
export function collectEvidence(decisions: readonly { evidence_refs?: EvidenceRef[] | undefined }[]) {
  const seen = new Set<string>();
  const out: EvidenceRef[] = [];
  for (const d of decisions) {
    for (const ref of d.evidence_refs ?? []) {
      const key = JSON.stringify([ref.kind, ref.schema_id, ref.authority, ref.reference]);
      if (seen.has(key) || out.length >= MAX_EVIDENCE_REFS) continue;
      seen.add(key);
      out.push(ref);
    }
  }
  return out;
}
