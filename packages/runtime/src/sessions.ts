import type { GeodeConnection } from "@geode/bus";
import {
  type Correlation,
  type CorrelationInput,
  type DispatchOutcome,
  ErrorCode,
  correlation as fillCorrelation,
  GeodeError,
  HookName,
  RuntimeEvent,
  type SessionRecord,
} from "@geode/contracts";
import { invokeLifecycleHook, type LifecycleOptions, lazySessionStore, lifecycleDeps } from "./lifecycle.js";

export interface SessionStartRequest {
  session_id: string;
  model: string;
  provider: string;
  /** Resume an existing session (generation + 1); without it an existing session is refused. */
  resume?: boolean;
  /** Other correlation ids for the hook, event and timeline (run_id, turn_id, …). */
  correlation?: CorrelationInput;
}

export interface SessionStartResult {
  session_id: string;
  record: SessionRecord;
  resumed: boolean;
  /** Correlation to use for the session's work (session_id and generation filled in). */
  correlation: Correlation;
  /** The SessionStart outcome, or null when the hook could not be invoked (see `hookError`). */
  outcome: DispatchOutcome | null;
  hookError?: GeodeError;
}

export interface SessionEndRequest {
  reason: string;
  status: "completed" | "error";
  correlation?: CorrelationInput;
}

export interface SessionEndResult {
  /** True for the one call that made the terminal state durable; false when it was already ended. */
  ended: boolean;
  record: SessionRecord | null;
  outcome: DispatchOutcome | null;
  hookError?: GeodeError;
}

export interface Sessions {
  /**
   * Creates (or, with `resume`, resumes) the session durably in KV `{ns}_sessions`, revision-checked;
   * only then invokes SessionStart and publishes `session_started` and `session.started`. A resume
   * increments the generation and keeps a `paused` status (a parked verification stays parked).
   */
  start(request: SessionStartRequest): Promise<SessionStartResult>;
  /**
   * Makes the terminal state (`completed` or `error`) durable; only the call whose revision-checked
   * update wins then invokes SessionEnd and publishes `session_ended` and `session.ended`. Any other
   * call, concurrent or later, returns `ended: false` and fires nothing. The verifier clears the
   * session's verification state when it reads `session.ended` (its own state, its own write).
   */
  end(sessionId: string, request: SessionEndRequest): Promise<SessionEndResult>;
  get(sessionId: string): Promise<SessionRecord | null>;
}

export type SessionsOptions = LifecycleOptions;

/** The runtime's session lifecycle (docs/protocol.md, "Sessions"). */
export function createSessions(conn: GeodeConnection, options: SessionsOptions = {}): Sessions {
  const { hooks, events } = lifecycleDeps(conn, options);
  const sessions = lazySessionStore(conn);

  return {
    async get(sessionId) {
      return (await sessions()).get(sessionId);
    },

    async start(request) {
      if (request.session_id === "")
        throw new GeodeError(ErrorCode.InvalidRequest, "session_id must not be empty");
      const { record: rec, resumed } = await (await sessions()).start(request);
      const corr = fillCorrelation({
        ...request.correlation,
        session_id: request.session_id,
        session_generation: rec.generation,
      });
      const hook = await invokeLifecycleHook(
        hooks,
        HookName.SessionStart,
        { model: rec.model, provider: rec.provider, resumed, status: rec.status },
        corr,
        options.hookTimeoutMs,
      );
      const bus = await events();
      const facts = {
        model: rec.model,
        provider: rec.provider,
        resumed,
        status: rec.status,
        generation: rec.generation,
      };
      await Promise.all([
        bus.emit(RuntimeEvent.SESSION_STARTED, facts, corr),
        bus.timeline("session.started", facts, corr),
      ]);
      return { session_id: request.session_id, record: rec, resumed, correlation: corr, ...hook };
    },

    async end(sessionId, request) {
      const result = await (await sessions()).end(sessionId, request.status, request.reason);
      if (!result.ended) return { ended: false, record: result.record, outcome: null };
      const rec = result.record as SessionRecord;
      const corr = fillCorrelation({
        ...request.correlation,
        session_id: sessionId,
        session_generation: rec.generation,
      });
      const hook = await invokeLifecycleHook(
        hooks,
        HookName.SessionEnd,
        { reason: request.reason, status: request.status },
        corr,
        options.hookTimeoutMs,
      );
      const bus = await events();
      const facts = { reason: request.reason, status: request.status, generation: rec.generation };
      await Promise.all([
        bus.emit(RuntimeEvent.SESSION_ENDED, facts, corr),
        bus.timeline("session.ended", facts, corr),
      ]);
      return { ended: true, record: rec, ...hook };
    },
  };
}
