import type { GeodeConnection } from "@geode/bus";
import type {
  Correlation,
  CorrelationInput,
  DispatchOutcome,
  GeodeError,
  SessionRecord,
} from "@geode/contracts";
import { endSession, startSession } from "@geode/lifecycle";
import { type LifecycleOptions, lifecycleDeps } from "./lifecycle.js";

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

/** The runtime's session lifecycle (docs/protocol.md, "Sessions"): @geode/lifecycle's, on this connection. */
export function createSessions(conn: GeodeConnection, options: SessionsOptions = {}): Sessions {
  const deps = lifecycleDeps(conn, options);

  return {
    async get(sessionId) {
      return (await deps()).sessions.get(sessionId);
    },

    async start(request) {
      const started = await startSession(await deps(), {
        session_id: request.session_id,
        model: request.model,
        provider: request.provider,
        resume: request.resume ? "resume" : "refuse",
        ...(request.correlation ? { correlation: request.correlation } : {}),
      });
      return {
        session_id: request.session_id,
        record: started.record,
        resumed: started.change === "resumed",
        correlation: started.correlation,
        outcome: started.outcome,
        ...(started.hookError ? { hookError: started.hookError } : {}),
      };
    },

    async end(sessionId, request) {
      const ended = await endSession(await deps(), {
        session_id: sessionId,
        status: request.status,
        reason: request.reason,
        ...(request.correlation ? { correlation: request.correlation } : {}),
      });
      return {
        ended: ended.ended,
        record: ended.record,
        outcome: ended.outcome,
        ...(ended.hookError ? { hookError: ended.hookError } : {}),
      };
    },
  };
}
