import type { RuntimeEventBus } from "@geode/bus";
import {
  type BuiltInResult,
  type Correlation,
  type EvidenceRef,
  type PolicyAction,
  sha256,
  type TimelineKind,
  type VerifyTotals,
} from "@geode/contracts";
import type { DecisionRecord } from "../verification-policy.js";

/** One timeline record a verification publishes. */
export interface TimelineEntry {
  kind: TimelineKind;
  payload: Record<string, unknown>;
}

/** Where a root turn's verification state is checkpointed. */
export interface Checkpoint {
  bucket: string;
  key: string;
}

/** `verification.decided`: the candidate's SHA-256 (never its text), the built-in result and each decision. */
export function decidedEntry(r: {
  turnId: string;
  attempt: number;
  candidateSha: string;
  builtIn: BuiltInResult;
  action: PolicyAction;
  decisions: DecisionRecord[];
  extra?: Record<string, unknown>;
}): TimelineEntry {
  return {
    kind: "verification.decided",
    payload: {
      root_turn: r.turnId,
      verify_attempt: r.attempt,
      candidate_sha256: r.candidateSha,
      built_in_passed: r.builtIn.passed,
      passed: r.builtIn.passed,
      built_in: r.builtIn,
      policy_action: r.action,
      deliver: r.action === "accept",
      decisions: r.decisions,
      ...r.extra,
    },
  };
}

/** `verification.continued`: another attempt follows; the instruction only as digest and size. */
export function continuedEntry(r: {
  turnId: string;
  attempt: number;
  nextAttempt: number;
  action: PolicyAction;
  instruction: string | undefined;
}): TimelineEntry {
  return {
    kind: "verification.continued",
    payload: {
      root_turn: r.turnId,
      verify_attempt: r.attempt,
      next_attempt: r.nextAttempt,
      policy_action: r.action,
      instruction_sha256: r.instruction === undefined ? null : sha256(r.instruction),
      instruction_bytes: r.instruction === undefined ? 0 : Buffer.byteLength(r.instruction, "utf8"),
    },
  };
}

/** `verification.evidence`: the final result's evidence, totals and checkpoint. */
export function evidenceEntry(r: {
  turnId: string;
  attempt: number;
  action: PolicyAction;
  candidateSha: string;
  evidence: EvidenceRef[];
  totals: VerifyTotals;
  checkpoint: Checkpoint;
}): TimelineEntry {
  return {
    kind: "verification.evidence",
    payload: {
      root_turn: r.turnId,
      verify_attempt: r.attempt,
      policy_action: r.action,
      candidate_sha256: r.candidateSha,
      evidence_refs: r.evidence,
      totals: r.totals,
      checkpoint: r.checkpoint,
    },
  };
}

/** Publishes the entries and waits until the stream stored each (or the bus gave up and logged). */
export async function publishTimeline(
  events: RuntimeEventBus,
  correlation: Correlation,
  entries: readonly TimelineEntry[],
): Promise<void> {
  await Promise.all(entries.map((e) => events.timeline(e.kind, e.payload, correlation)));
}
