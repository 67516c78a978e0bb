import { createHookClient, type Logger, RuntimeEventBus, serveRequests, silentLogger } from "@geode/bus";
import {
  type AttributedDecision,
  type BuiltInResult,
  type Correlation,
  type DispatchOutcome,
  ErrorCode,
  type EvidenceRef,
  correlation as fillCorrelation,
  GeodeError,
  HookName,
  type HookPayloadInput,
  type Names,
  type PolicyAction,
  parseOrThrow,
  QueueGroup,
  RuntimeEvent,
  sanitizeText,
  sha256,
  type TurnRecord,
  VerifyFinalizeRequestSchema,
  type VerifyReply,
  VerifyResolveRequestSchema,
} from "@geode/contracts";
import { AttemptStore, newTurnRecord, PAUSE_REASON, SessionStore, totalsOf } from "@geode/state";
import type { NatsConnection } from "@nats-io/transport-node";
import { compileRubric, runBuiltInVerifier } from "./built-in-verifier.js";
import { startSessionCleanup } from "./session-cleanup.js";
import {
  applyBudget,
  collectEvidence,
  type DecisionRecord,
  decisionRecord,
  isParked,
  postVerifyPolicy,
  stopPolicy,
} from "./verification-policy.js";

/** Characters of the candidate that hooks see as `candidate_summary` (then `…[truncated:N]`). */
export const CANDIDATE_SUMMARY_CHARS = 280;

export interface VerifierOptions {
  nc: NatsConnection;
  names: Names;
  log?: Logger;
  /** Publisher of events and timeline records (default: a bus with source `verifier`). */
  events?: RuntimeEventBus;
  /** Budget of each hook invocation (PreVerify, PostVerify, Stop). Default 30 s. */
  hookTimeoutMs?: number;
}

export interface RunningVerifier {
  stop(): Promise<void>;
}

/** What hooks see of a candidate: its first 280 characters, secrets masked, never the whole text. */
export function candidateSummary(text: string): string {
  return sanitizeText(text, CANDIDATE_SUMMARY_CHARS);
}

const invalid = (message: string) => new GeodeError(ErrorCode.InvalidRequest, message);

/**
 * The root turn of a request: `correlation.session_id` + `correlation.turn_id`. Left out, they are
 * `""` like every correlation field, and `""` is then that turn's id (a caller that omits them gets
 * one shared budget, never an unbounded one).
 */
function rootTurn(c: Correlation): { sessionId: string; turnId: string } {
  return { sessionId: c.session_id, turnId: c.turn_id };
}

/**
 * The verifier: answers `{ns}.verify.finalize` and `{ns}.verify.resolve` in queue group `verifier`
 * (docs/protocol.md). Stateless apart from KV `{ns}_verify` and `{ns}_sessions`, so replicas scale out;
 * it clears a session's `{ns}_verify` records once the session ended (see `startSessionCleanup`).
 */
export async function startVerifier(options: VerifierOptions): Promise<RunningVerifier> {
  const { nc, names } = options;
  const log = options.log ?? silentLogger();
  const events = options.events ?? (await RuntimeEventBus.create({ nc, names, source: "verifier", log }));
  const hooks = createHookClient(nc, names);
  const attempts = await AttemptStore.open({ nc, names });
  const sessions = await SessionStore.open({ nc, names });
  const cleanup = await startSessionCleanup({ nc, names, attempts, log });
  const hookTimeoutMs = options.hookTimeoutMs ?? 30_000;

  const invoke = <H extends HookName>(hook: H, payload: HookPayloadInput<H>, corr: Correlation) =>
    hooks.invoke(hook, payload, corr, { timeoutMs: hookTimeoutMs });

  async function decide(
    request: ReturnType<typeof VerifyFinalizeRequestSchema.parse>,
    corr: Correlation,
    attempt: number,
    rubric: ReturnType<typeof compileRubric>,
  ) {
    const { candidate } = request;
    const mode = request.mode ?? "rule_based";
    const summary = candidateSummary(candidate.text);
    const facts = {
      termination_reason: candidate.termination_reason,
      rounds: candidate.rounds,
      tool_call_count: candidate.tool_call_count,
      candidate_summary: summary,
    };

    const pre = await invoke(HookName.PreVerify, { ...facts, mode }, corr);
    const additionalMisses = pre.decisions
      .filter((d) => d.action === "strengthen")
      .flatMap((d) => d.additional_misses ?? []);
    const builtIn = runBuiltInVerifier({
      text: candidate.text,
      termination_reason: candidate.termination_reason,
      mode,
      rubric,
      additionalMisses,
    });
    const verifyFields = {
      passed: builtIn.passed,
      mode,
      score: builtIn.score,
      rubric_misses: builtIn.rubric_misses,
      ...facts,
      effective_mode: mode,
      should_retry: builtIn.should_retry,
    };

    const post = await invoke(HookName.PostVerify, verifyFields, corr);
    const policy = applyBudget(postVerifyPolicy(builtIn, post.decisions, post.blocked), attempt);
    const evidenceBeforeStop = collectEvidence([...pre.decisions, ...post.decisions]);

    const stop = await invoke(
      HookName.Stop,
      { ...verifyFields, policy_action: policy.action, evidence_refs: evidenceBeforeStop },
      corr,
    );
    const { result, ignored } = stopPolicy(policy, stop.decisions, attempt);
    const evidence = collectEvidence([...pre.decisions, ...post.decisions, ...stop.decisions]);

    const records: DecisionRecord[] = [
      ...recordsOf("PreVerify", pre),
      ...(post.decisions.length > 0 || !policy.fallback ? recordsOf("PostVerify", post) : [policy.fallback]),
      ...recordsOf("Stop", stop),
    ];
    return { builtIn, result, ignored, evidence, records, hookErrors: handlerErrorCount(pre, post, stop) };
  }

  async function finalize(body: unknown): Promise<VerifyReply> {
    const request = parseOrThrow(VerifyFinalizeRequestSchema, body, ErrorCode.InvalidRequest);
    const corrIn = request.correlation;
    const { sessionId, turnId } = rootTurn(corrIn);
    const rubric = compileRubric(request.rubric); // invalid patterns are refused before any state changes
    const { candidate } = request;
    const candidateSha = sha256(candidate.text);
    const usage = candidate.usage ?? { input_tokens: 0, output_tokens: 0 };

    const attempt = await attempts.reserve(sessionId, turnId, {
      rounds: candidate.rounds,
      tool_call_count: candidate.tool_call_count,
      usage,
      candidate_sha256: candidateSha,
    });
    const corr: Correlation = { ...corrIn, verify_attempt: attempt };
    let decided: Awaited<ReturnType<typeof decide>>;
    try {
      decided = await decide(request, corr, attempt, rubric);
    } catch (err) {
      await attempts.release(sessionId, turnId, attempt).catch((e: unknown) => {
        log.warn({ err: e, session_id: sessionId, turn_id: turnId }, "could not release attempt");
      });
      throw err;
    }
    const { builtIn, result, evidence } = decided;
    const action = result.action;
    const parked = isParked(action);
    const final = action === "accept" || parked;

    const { value } = await attempts.mutate(sessionId, turnId, (current) => {
      const now = Date.now();
      const rec: TurnRecord = current ?? newTurnRecord(sessionId, turnId, now);
      const updatedAttempts = rec.attempts.map((a) =>
        a.attempt === attempt
          ? { ...a, state: "decided" as const, policy_action: action, built_in: builtIn, decided_at: now }
          : a,
      );
      const next: TurnRecord = { ...rec, attempts: updatedAttempts, updated_at: now };
      if (final) {
        next.final = {
          attempt,
          policy_action: action,
          candidate_sha256: candidateSha,
          totals: totalsOf(next),
          evidence_refs: evidence,
          decided_at: now,
          resolved_by: "verifier",
        };
      }
      if (parked) {
        next.status = "parked";
        next.pending = {
          attempt,
          text: candidate.text,
          candidate_sha256: candidateSha,
          policy_action: action,
        };
      } else if (action === "accept") {
        next.status = "delivered";
      }
      return next;
    });
    const totals = totalsOf(value as TurnRecord);
    if (parked) await sessions.pause(corr);

    const instruction = result.instruction;
    await Promise.all([
      events.timeline(
        "verification.decided",
        {
          root_turn: turnId,
          verify_attempt: attempt,
          candidate_sha256: candidateSha,
          built_in_passed: builtIn.passed,
          passed: builtIn.passed,
          built_in: builtIn,
          policy_action: action,
          deliver: action === "accept",
          decisions: decided.records,
          ignored_decisions: decided.ignored.map((d) => ({
            surface: "Stop",
            handler: d.handler,
            action: d.action,
          })),
          handler_error_count: decided.hookErrors,
        },
        corr,
      ),
      action === "revise" || action === "continue"
        ? events.timeline(
            "verification.continued",
            {
              root_turn: turnId,
              verify_attempt: attempt,
              next_attempt: attempt + 1,
              policy_action: action,
              instruction_sha256: instruction === undefined ? null : sha256(instruction),
              instruction_bytes: instruction === undefined ? 0 : Buffer.byteLength(instruction, "utf8"),
            },
            corr,
          )
        : null,
      parked
        ? events.timeline(
            "verification.pending",
            {
              root_turn: turnId,
              verify_attempt: attempt,
              policy_action: action,
              candidate_sha256: candidateSha,
              reason: PAUSE_REASON,
            },
            corr,
          )
        : null,
      final
        ? events.timeline(
            "verification.evidence",
            {
              root_turn: turnId,
              verify_attempt: attempt,
              policy_action: action,
              candidate_sha256: candidateSha,
              evidence_refs: evidence,
              totals,
              checkpoint: { bucket: names.buckets.verify, key: attempts.key(sessionId, turnId) },
            },
            corr,
          )
        : null,
      events.emit(
        action === "accept" ? RuntimeEvent.TURN_VERIFY_PASSED : RuntimeEvent.TURN_VERIFY_FAILED,
        {
          verify_attempt: attempt,
          policy_action: action,
          passed: builtIn.passed,
          mode: builtIn.mode,
          score: builtIn.score,
          rubric_misses: builtIn.rubric_misses,
          candidate_sha256: candidateSha,
        },
        corr,
      ),
    ]);
    log.info(
      { session_id: sessionId, turn_id: turnId, verify_attempt: attempt, policy_action: action },
      "verification decided",
    );
    return reply({
      action,
      attempt,
      builtIn,
      totals,
      candidateSha,
      evidence,
      instruction: action === "revise" || action === "continue" ? instruction : undefined,
      pendingText: parked ? candidate.text : undefined,
    });
  }

  async function resolve(body: unknown): Promise<VerifyReply> {
    const request = parseOrThrow(VerifyResolveRequestSchema, body, ErrorCode.InvalidRequest);
    const corrIn = request.correlation;
    const { sessionId, turnId } = rootTurn(corrIn);
    const instruction = request.instruction?.trim() ? request.instruction : undefined;
    if (request.action === "revise" && instruction === undefined)
      throw invalid("revise requires an instruction");
    let parkedRecord: TurnRecord | null = null;
    const { value } = await attempts.mutate(sessionId, turnId, (current) => {
      if (current?.status !== "parked" || !current.pending)
        throw invalid("this turn is not parked for external verification");
      parkedRecord = current;
      const now = Date.now();
      const pending = current.pending;
      return {
        ...current,
        status: request.action === "deliver" ? "delivered" : "open",
        pending: null,
        final:
          request.action === "deliver"
            ? {
                attempt: pending.attempt,
                policy_action: "accept",
                candidate_sha256: pending.candidate_sha256,
                totals: totalsOf(current),
                evidence_refs: current.final?.evidence_refs ?? [],
                decided_at: now,
                resolved_by: "owner",
              }
            : current.final,
        updated_at: now,
      };
    });
    const before = parkedRecord as unknown as TurnRecord;
    const pending = before.pending!;
    const rec = value as TurnRecord;
    const entry = rec.attempts.find((a) => a.attempt === pending.attempt);
    const builtIn: BuiltInResult = entry?.built_in ?? {
      passed: false,
      mode: "rule_based",
      score: 0,
      rubric_misses: [],
      should_retry: false,
    };
    const evidence = before.final?.evidence_refs ?? [];
    const totals = totalsOf(rec);
    await sessions.unpause(sessionId);
    const corr = fillCorrelation({ ...corrIn, verify_attempt: pending.attempt });
    const action: PolicyAction = request.action === "deliver" ? "accept" : "revise";
    const ownerDecision = decisionRecord(
      "resolve",
      { handler: "owner", action: request.action, reason: "external owner resolution", instruction },
      [],
    );
    await Promise.all([
      events.timeline(
        "verification.decided",
        {
          root_turn: turnId,
          verify_attempt: pending.attempt,
          candidate_sha256: pending.candidate_sha256,
          built_in_passed: builtIn.passed,
          passed: builtIn.passed,
          built_in: builtIn,
          policy_action: action,
          deliver: action === "accept",
          decisions: [ownerDecision],
          resolved: pending.policy_action,
        },
        corr,
      ),
      action === "revise"
        ? events.timeline(
            "verification.continued",
            {
              root_turn: turnId,
              verify_attempt: pending.attempt,
              next_attempt: rec.attempts.length,
              policy_action: action,
              instruction_sha256: ownerDecision.instruction_sha256,
              instruction_bytes: ownerDecision.instruction_bytes,
            },
            corr,
          )
        : events.timeline(
            "verification.evidence",
            {
              root_turn: turnId,
              verify_attempt: pending.attempt,
              policy_action: action,
              candidate_sha256: pending.candidate_sha256,
              evidence_refs: evidence,
              totals,
              checkpoint: { bucket: names.buckets.verify, key: attempts.key(sessionId, turnId) },
            },
            corr,
          ),
    ]);
    return reply({
      action,
      attempt: pending.attempt,
      builtIn,
      totals,
      candidateSha: pending.candidate_sha256,
      evidence,
      instruction: action === "revise" ? instruction : undefined,
      pendingText: action === "accept" ? pending.text : undefined,
    });
  }

  const responders = [
    serveRequests(nc, names.verifyFinalize, { queue: QueueGroup.Verifier, log }, finalize),
    serveRequests(nc, names.verifyResolve, { queue: QueueGroup.Verifier, log }, resolve),
  ];
  return {
    async stop() {
      await Promise.all(responders.map((r) => r.drain()));
      await cleanup.stop();
      // A bus given by the caller may carry others' records too; ours are flushed either way.
      await events.flush();
    },
  };
}

function recordsOf(surface: "PreVerify" | "PostVerify" | "Stop", outcome: DispatchOutcome): DecisionRecord[] {
  return outcome.decisions.map((d: AttributedDecision) => decisionRecord(surface, d, d.evidence_refs ?? []));
}

function handlerErrorCount(...outcomes: DispatchOutcome[]): number {
  return outcomes.reduce((n, o) => n + o.handler_errors.length, 0);
}

function reply(r: {
  action: PolicyAction;
  attempt: number;
  builtIn: BuiltInResult;
  totals: VerifyReply["totals"];
  candidateSha: string;
  evidence: EvidenceRef[];
  instruction: string | undefined;
  pendingText: string | undefined;
}): VerifyReply {
  return {
    policy_action: r.action,
    deliver: r.action === "accept",
    verify_attempt: r.attempt,
    built_in: r.builtIn,
    ...(r.instruction === undefined ? {} : { follow_up_instruction: r.instruction }),
    ...(r.pendingText === undefined ? {} : { pending_text: r.pendingText }),
    totals: r.totals,
    candidate_sha256: r.candidateSha,
    evidence_refs: r.evidence,
  };
}
