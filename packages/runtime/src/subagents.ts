import type { GeodeConnection } from "@geode/bus";
import {
  type Correlation,
  type CorrelationInput,
  type DispatchOutcome,
  ErrorCode,
  correlation as fillCorrelation,
  GeodeError,
  type GeodeError as GeodeErrorType,
  HookName,
  RuntimeEvent,
} from "@geode/contracts";
import { invokeLifecycleHook, type LifecycleOptions, lazySessionStore, lifecycleDeps } from "./lifecycle.js";

export interface SubagentStartRequest {
  task_id: string;
  task_type: string;
  /** Shown to SubagentStart handlers only; never published in events or the timeline. */
  description: string;
  parent_session_id: string;
  /** The child's session id (default `{parent_session_id}-{task_id}`); it must be new. */
  child_session_id?: string;
  model?: string;
  provider?: string;
  /** Optional `generation` of the hook payloads (e.g. the parent's session generation). */
  generation?: number;
  /** The parent's correlation ids (run_id, turn_id, …) for the hooks, events and timeline. */
  correlation?: CorrelationInput;
}

export interface SubagentStopRequest {
  success: boolean;
  /** Default `completed` on success, else `error`. */
  status?: string;
  /** Error text on failure ("" on success). */
  error?: string;
}

export interface SubagentStopResult {
  /** True for the one call that made the child's terminal state durable. */
  stopped: boolean;
  outcome: DispatchOutcome | null;
  hookError?: GeodeErrorType;
}

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

/** Sub-agent lifecycle helpers (SubagentStart / SubagentStop at the right durable points). */
export function createSubagents(conn: GeodeConnection, options: SubagentsOptions = {}): Subagents {
  const { hooks, events } = lifecycleDeps(conn, options);
  const sessions = lazySessionStore(conn);

  return {
    async start(request) {
      if (request.task_id === "" || request.parent_session_id === "")
        throw new GeodeError(ErrorCode.InvalidRequest, "task_id and parent_session_id are required");
      const childId = request.child_session_id ?? `${request.parent_session_id}-${request.task_id}`;
      const child = await (await sessions()).create(childId, {
        reason: `subagent of ${request.parent_session_id}`.slice(0, 256),
        model: request.model ?? "",
        provider: request.provider ?? "",
      });
      const parentCorr = fillCorrelation({ ...request.correlation, session_id: request.parent_session_id });
      const childCorr = fillCorrelation({ session_id: childId, run_id: parentCorr.run_id });
      const generation = request.generation === undefined ? {} : { generation: request.generation };
      const started = await invokeLifecycleHook(
        hooks,
        HookName.SubagentStart,
        {
          task_id: request.task_id,
          task_type: request.task_type,
          description: request.description,
          child_session_key: childId,
          parent_session_key: request.parent_session_id,
          ...generation,
        },
        parentCorr,
        options.hookTimeoutMs,
      );
      const ids = {
        task_id: request.task_id,
        task_type: request.task_type,
        child_session_key: childId,
        parent_session_key: request.parent_session_id,
      };
      const bus = await events();
      await Promise.all([
        bus.emit(
          RuntimeEvent.SUBAGENT_STARTED,
          { ...ids, model: child.model, provider: child.provider },
          parentCorr,
        ),
        bus.timeline("subagent.started", ids, parentCorr),
      ]);
      const startedAt = Date.now();

      return {
        task_id: request.task_id,
        child_session_id: childId,
        correlation: childCorr,
        outcome: started.outcome,
        ...(started.hookError ? { hookError: started.hookError } : {}),
        async stop(result) {
          const status = result.status ?? (result.success ? "completed" : "error");
          const written = await (await sessions()).end(
            childId,
            result.success ? "completed" : "error",
            status.slice(0, 256),
            { ifExists: true },
          );
          if (!written.ended) return { stopped: false, outcome: null };
          const durationMs = Date.now() - startedAt;
          const stopped = await invokeLifecycleHook(
            hooks,
            HookName.SubagentStop,
            {
              task_id: request.task_id,
              task_type: request.task_type,
              success: result.success,
              status,
              duration_ms: durationMs,
              error: result.error ?? "",
              child_session_key: childId,
              ...generation,
            },
            parentCorr,
            options.hookTimeoutMs,
          );
          const facts = { ...ids, success: result.success, status, duration_ms: durationMs };
          await Promise.all([
            bus.emit(
              result.success ? RuntimeEvent.SUBAGENT_COMPLETED : RuntimeEvent.SUBAGENT_FAILED,
              facts,
              parentCorr,
            ),
            bus.timeline("subagent.stopped", facts, parentCorr),
          ]);
          return { stopped: true, ...stopped };
        },
      };
    },
  };
}
