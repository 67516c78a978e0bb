import {
  type AgentKind,
  type Correlation,
  type CorrelationInput,
  ErrorCode,
  correlation as fillCorrelation,
  GeodeError,
  HookName,
  RuntimeEvent,
  type SessionRecord,
} from "@geode/contracts";
import { KeepRecord, TERMINAL_STATUSES } from "@geode/state";
import { type HookResult, invokeLifecycleHook, type LifecycleDeps, record } from "./lifecycle-deps.js";

/**
 * What a start does with a session that exists already: `refuse` it (`invalid_request`), `resume`
 * it (a new generation, a parked verification stays parked), or resume it only `if-ended` (an
 * agent's next event after its session ended; a live session is left as it is).
 */
export type ResumeRule = "refuse" | "resume" | "if-ended";

export interface SessionStartRequest {
  session_id: string;
  /** The model, when known; a live session kept by `if-ended` records a different one as a switch. */
  model?: string | undefined;
  provider: string;
  resume: ResumeRule;
  /** The gateway's agent and its kind, kept in the record (a runtime's own sessions name none). */
  agent?: { name: string; kind: AgentKind } | undefined;
  /** Further facts of `session_started` / `session.started` (Claude Code's `source`, …). */
  facts?: Record<string, unknown>;
  /**
   * Runs once a new session or generation is durable, before SessionStart and its records (the
   * agent gateway opens the session's run here, so the run's mirror has the session from its start).
   */
  whenDurable?: (started: { record: SessionRecord; correlation: Correlation }) => Promise<void>;
  /** The other correlation ids of the hook, event and timeline record (run_id, turn_id, …). */
  correlation?: CorrelationInput;
  signal?: AbortSignal | undefined;
}

export interface SessionStartResult extends HookResult {
  /** What happened to the record: a new session, a new generation, nothing, or only its model. */
  change: "created" | "resumed" | "unchanged" | "model_switched";
  record: SessionRecord;
  /** Correlation of the session's work (session_id and generation filled in). */
  correlation: Correlation;
}

/** The record a start writes, and what kind of change it is (KeepRecord: none). */
function startedRecord(
  request: SessionStartRequest,
  current: SessionRecord | null,
  now: number,
): { next: SessionRecord; change: SessionStartResult["change"] } {
  const model = request.model ?? current?.model ?? "";
  const agent = request.agent ? { agent: request.agent.name, agent_kind: request.agent.kind } : {};
  if (current === null)
    return {
      next: {
        status: "active",
        reason: "",
        generation: 0,
        model,
        provider: request.provider,
        updated_at: now,
        ...agent,
      },
      change: "created",
    };
  const ended = TERMINAL_STATUSES.has(current.status);
  if (request.resume === "refuse")
    throw new GeodeError(ErrorCode.InvalidRequest, `session ${request.session_id} already exists`);
  if (request.resume === "resume" || ended) {
    const parked = current.status === "paused";
    return {
      next: {
        status: parked ? "paused" : "active",
        reason: parked ? current.reason : "",
        generation: current.generation + 1,
        model,
        provider: request.provider,
        updated_at: now,
        ...(current.agent ? { agent: current.agent } : {}),
        ...(current.agent_kind ? { agent_kind: current.agent_kind } : {}),
        ...agent,
      },
      change: "resumed",
    };
  }
  if (request.model === undefined || request.model === current.model) throw new KeepRecord();
  return { next: { ...current, model: request.model, updated_at: now }, change: "model_switched" };
}

/**
 * Starts (or resumes) a session: the record in KV `{ns}_sessions` is written first, revision-checked,
 * so exactly one caller on any replica starts it; only then SessionStart runs and `session_started`
 * and `session.started` are published. A live session kept as it is fires nothing; one whose model
 * changed publishes `model_switched`.
 */
export async function startSession(
  deps: LifecycleDeps,
  request: SessionStartRequest,
): Promise<SessionStartResult> {
  if (request.session_id === "")
    throw new GeodeError(ErrorCode.InvalidRequest, "session_id must not be empty");
  let change: SessionStartResult["change"] = "unchanged";
  let before: SessionRecord | null = null;
  const written = await deps.sessions.mutate(request.session_id, (current) => {
    before = current;
    const r = startedRecord(request, current, Date.now());
    change = r.change;
    return r.next;
  });
  const rec = written.value as SessionRecord;
  if (!written.written) change = "unchanged";
  const corr = fillCorrelation({
    ...request.correlation,
    session_id: request.session_id,
    session_generation: rec.generation,
  });
  if (change === "unchanged") return { change, record: rec, correlation: corr, outcome: null };
  if (change === "model_switched") {
    const from = (before as SessionRecord | null)?.model ?? "";
    await deps.events.emit(
      RuntimeEvent.MODEL_SWITCHED,
      { from, to: rec.model, provider: rec.provider },
      corr,
    );
    return { change, record: rec, correlation: corr, outcome: null };
  }
  const resumed = change === "resumed";
  await request.whenDurable?.({ record: rec, correlation: corr });
  const hook = await invokeLifecycleHook(
    deps,
    HookName.SessionStart,
    { model: rec.model, provider: rec.provider, resumed, status: rec.status },
    corr,
    request.signal,
  );
  const facts = {
    model: rec.model,
    provider: rec.provider,
    resumed,
    status: rec.status,
    generation: rec.generation,
    ...(rec.agent ? { agent: rec.agent } : {}),
    ...(rec.agent_kind ? { agent_kind: rec.agent_kind } : {}),
    ...request.facts,
  };
  await record(deps, RuntimeEvent.SESSION_STARTED, "session.started", facts, corr);
  return { change, record: rec, correlation: corr, ...hook };
}

export interface SessionEndRequest {
  session_id: string;
  status: "completed" | "error";
  reason: string;
  /** An unknown session is a no-op instead of `invalid_request`. */
  ifExists?: boolean;
  correlation?: CorrelationInput;
  signal?: AbortSignal | undefined;
}

export interface SessionEndResult extends HookResult {
  /** True for the one call that made the terminal state durable; false when it was already ended. */
  ended: boolean;
  record: SessionRecord | null;
  correlation: Correlation;
}

/**
 * Ends a session: the terminal state (`completed` or `error`) is made durable first; only the call
 * whose revision-checked write won then invokes SessionEnd and publishes `session_ended` and
 * `session.ended`. Any other call, concurrent or later, returns `ended: false` and fires nothing.
 */
export async function endSession(deps: LifecycleDeps, request: SessionEndRequest): Promise<SessionEndResult> {
  const result = await deps.sessions.end(request.session_id, request.status, request.reason, {
    ifExists: request.ifExists ?? false,
  });
  const generation = result.record?.generation ?? request.correlation?.session_generation ?? 0;
  const corr = fillCorrelation({
    ...request.correlation,
    session_id: request.session_id,
    session_generation: generation,
  });
  if (!result.ended) return { ended: false, record: result.record, correlation: corr, outcome: null };
  const hook = await invokeLifecycleHook(
    deps,
    HookName.SessionEnd,
    { reason: request.reason, status: request.status },
    corr,
    request.signal,
  );
  const facts = { reason: request.reason, status: request.status, generation };
  await record(deps, RuntimeEvent.SESSION_ENDED, "session.ended", facts, corr);
  return { ended: true, record: result.record, correlation: corr, ...hook };
}
