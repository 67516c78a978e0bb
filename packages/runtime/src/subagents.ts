import type { GeodeConnection } from "@geode/bus";
import type { Correlation, DispatchOutcome, GeodeError as GeodeErrorType } from "@geode/contracts";
import {
  type SubagentStartRequest as LifecycleStartRequest,
  type SubagentStopRequest as LifecycleStopRequest,
  type SubagentStopResult as LifecycleStopResult,
  startSubagent,
  stopSubagent,
} from "@geode/lifecycle";
import { type LifecycleOptions, lifecycleDeps } from "./lifecycle.js";

/** What a runtime gives to start a sub-agent; the child's session id must be new. */
export type SubagentStartRequest = Omit<LifecycleStartRequest, "child" | "signal">;

/** A sub-agent's terminal result; the runtime measures `duration_ms` itself. */
export type SubagentStopRequest = Pick<LifecycleStopRequest, "success" | "status" | "error">;

/** `stopped` is true for the one call that made the child's terminal state durable. */
export type SubagentStopResult = LifecycleStopResult;

export interface Subagent {
  readonly task_id: string;
  readonly child_session_id: string;
  /** Correlation of the child's own work (session_id = the child). */
  readonly correlation: Correlation;
  /** The SubagentStart outcome (null if the hook could not be invoked). */
  readonly outcome: DispatchOutcome | null;
  readonly hookError?: GeodeErrorType;
  /**
   * Records the child's terminal result durably (its session record `completed` or `error`, once),
   * then invokes SubagentStop and publishes `subagent_completed` or
   * `subagent_failed` and `subagent.stopped`. A second call returns `stopped: false`.
   */
  stop(result: SubagentStopRequest): Promise<SubagentStopResult>;
}

export interface Subagents {
  /**
   * Fixes the child's identity first (its session record is created in KV `{ns}_sessions`; an
   * existing id is refused with `invalid_request`), then invokes SubagentStart and publishes
   * `subagent_started` and `subagent.started`.
   */
  start(request: SubagentStartRequest): Promise<Subagent>;
}

export type SubagentsOptions = LifecycleOptions;

/** Sub-agent lifecycle helpers (SubagentStart / SubagentStop at the right durable points): @geode/lifecycle's. */
export function createSubagents(conn: GeodeConnection, options: SubagentsOptions = {}): Subagents {
  const lifecycle = lifecycleDeps(conn, options);

  return {
    async start(request) {
      const deps = await lifecycle();
      const started = await startSubagent(deps, { ...request, child: "new" });
      const startedAt = Date.now();
      return {
        task_id: started.task_id,
        child_session_id: started.child_session_id,
        correlation: started.correlation,
        outcome: started.outcome,
        ...(started.hookError ? { hookError: started.hookError } : {}),
        async stop(result) {
          const stopped = await stopSubagent(deps, started, {
            ...result,
            duration_ms: Date.now() - startedAt,
          });
          return {
            stopped: stopped.stopped,
            outcome: stopped.outcome,
            ...(stopped.hookError ? { hookError: stopped.hookError } : {}),
          };
        },
      };
    },
  };
}
