import type { Logger, RuntimeEventBus } from "@geode/bus";
import {
  type Correlation,
  type DispatchOutcome,
  type HookName,
  type HookPayloadInput,
  type Names,
  sanitizeText,
  sha256,
  VerifyFinalizeLeg,
  type VerifyMode,
} from "@geode/contracts";
import type { AttemptStore, SessionStore } from "@geode/state";
import { type CompiledRubric, compileRubric } from "../built-in-verifier.js";

/** Characters of the candidate that hooks see as `candidate_summary` (then `…[truncated:N]`). */
export const CANDIDATE_SUMMARY_CHARS = 280;

/** What hooks see of a candidate: its first 280 characters, secrets masked, never the whole text. */
export function candidateSummary(text: string): string {
  return sanitizeText(text, CANDIDATE_SUMMARY_CHARS);
}

/** Invokes one verification hook (PreVerify, PostVerify, Stop) within the verifier's hook budget. */
type InvokeVerifyHook = <H extends HookName>(
  hook: H,
  payload: HookPayloadInput<H>,
  correlation: Correlation,
) => Promise<DispatchOutcome>;

/** What the stages use, shared by every request of one verifier replica. */
export interface VerifierDeps {
  names: Names;
  log: Logger;
  events: RuntimeEventBus;
  invoke: InvokeVerifyHook;
  attempts: AttemptStore;
  sessions: SessionStore;
}

type FinalizeRequest = ReturnType<typeof VerifyFinalizeLeg.request.decode>;

/** The facts of a candidate every verification hook receives. */
interface CandidateFacts {
  termination_reason: string;
  rounds: number;
  tool_call_count: number;
  candidate_summary: string;
}

/**
 * One `{ns}.verify.finalize` request as it moves through the stages: the candidate, its root turn
 * (`session_id` + `turn_id`; left out they are `""`, one shared budget, never an unbounded one) and
 * the attempt number the verifier counted for it.
 */
export interface VerifyRun {
  deps: VerifierDeps;
  request: FinalizeRequest;
  sessionId: string;
  turnId: string;
  /** The verifier's own attempt number for the root turn, not the caller's word. */
  attempt: number;
  /** The request's correlation with `verify_attempt` set to `attempt`. */
  correlation: Correlation;
  rubric: CompiledRubric;
  mode: VerifyMode;
  candidateSha: string;
  facts: CandidateFacts;
}

/**
 * Parses a finalize request and takes the root turn's next attempt number. Invalid input (rubric
 * patterns included) is refused before any state changes; a parked turn is refused with
 * `session_paused`.
 */
export async function openVerifyRun(deps: VerifierDeps, body: unknown): Promise<VerifyRun> {
  const request = VerifyFinalizeLeg.request.decode(body);
  const rubric = compileRubric(request.rubric);
  const { candidate } = request;
  const { session_id: sessionId, turn_id: turnId } = request.correlation;
  const candidateSha = sha256(candidate.text);
  const attempt = await deps.attempts.reserve(sessionId, turnId, {
    rounds: candidate.rounds,
    tool_call_count: candidate.tool_call_count,
    usage: candidate.usage ?? { input_tokens: 0, output_tokens: 0 },
    candidate_sha256: candidateSha,
  });
  return {
    deps,
    request,
    sessionId,
    turnId,
    attempt,
    correlation: { ...request.correlation, verify_attempt: attempt },
    rubric,
    mode: request.mode ?? "rule_based",
    candidateSha,
    facts: {
      termination_reason: candidate.termination_reason,
      rounds: candidate.rounds,
      tool_call_count: candidate.tool_call_count,
      candidate_summary: candidateSummary(candidate.text),
    },
  };
}

/**
 * Gives back the attempt of a run that failed before deciding (hooks unreachable, …), so an outage
 * does not spend the revision budget.
 */
export async function releaseAttempt(run: VerifyRun): Promise<void> {
  await run.deps.attempts.release(run.sessionId, run.turnId, run.attempt).catch((err: unknown) => {
    run.deps.log.warn({ err, session_id: run.sessionId, turn_id: run.turnId }, "could not release attempt");
  });
}
