import {
  type Correlation,
  type CorrelationInput,
  ErrorCode,
  correlation as fillCorrelation,
  GeodeError,
  HookName,
  RuntimeEvent,
} from "@geode/contracts";
import { KeepRecord } from "@geode/state";
import { type HookResult, invokeLifecycleHook, type LifecycleDeps } from "./lifecycle-deps.js";

export interface SubagentStartRequest {
  task_id: string;
  task_type: string;
  /** Shown to SubagentStart handlers only; never published in events or the timeline. */
  description: string;
  parent_session_id: string;
  /** The child's session id (default `{parent_session_id}-{task_id}`). */
  child_session_id?: string;
  /** `new`: the child must not exist yet (`invalid_request` otherwise); `ensure`: an existing one is kept. */
  child: "new" | "ensure";
  model?: string;
  provider?: string;
  /** Optional `generation` of the hook payloads (e.g. the parent's session generation). */
  generation?: number;
  /** The parent's correlation ids (run_id, turn_id, …) for the hooks, events and timeline. */
  correlation?: CorrelationInput;
  signal?: AbortSignal | undefined;
}

/** A started sub-agent: who it is, and what `stopSubagent` needs. */
export interface StartedSubagent extends HookResult {
  task_id: string;
  task_type: string;
  child_session_id: string;
  /** Correlation of the parent's records about the child. */
  parent: Correlation;
  /** Correlation of the child's own work (session_id = the child, the parent's run). */
  correlation: Correlation;
  generation?: number | undefined;
}

/**
 * Starts a sub-agent: the child's identity is fixed first (its session record in KV
 * `{ns}_sessions`), then SubagentStart runs and `subagent_started` and `subagent.started` are
 * published, on the parent's correlation.
 */
export async function startSubagent(
  deps: LifecycleDeps,
  request: SubagentStartRequest,
): Promise<StartedSubagent> {
  if (request.task_id === "" || request.parent_session_id === "")
    throw new GeodeError(ErrorCode.InvalidRequest, "task_id and parent_session_id are required");
  const childId = request.child_session_id ?? `${request.parent_session_id}-${request.task_id}`;
  const fields = {
    reason: `subagent of ${request.parent_session_id}`.slice(0, 256),
    model: request.model ?? "",
    provider: request.provider ?? "",
  };
  const child =
    request.child === "new"
      ? await deps.sessions.create(childId, fields)
      : ((
          await deps.sessions.mutate(childId, (current) => {
            if (current !== null) throw new KeepRecord();
            return { status: "active", generation: 0, ...fields, updated_at: Date.now() };
          })
        ).value ?? { ...fields });
  const parent = fillCorrelation({ ...request.correlation, session_id: request.parent_session_id });
  const generation = request.generation === undefined ? {} : { generation: request.generation };
  const hook = await invokeLifecycleHook(
    deps,
    HookName.SubagentStart,
    {
      task_id: request.task_id,
      task_type: request.task_type,
      description: request.description,
      child_session_key: childId,
      parent_session_key: request.parent_session_id,
      ...generation,
    },
    parent,
    request.signal,
  );
  const ids = {
    task_id: request.task_id,
    task_type: request.task_type,
    child_session_key: childId,
    parent_session_key: request.parent_session_id,
  };
  await Promise.all([
    deps.events.emit(
      RuntimeEvent.SUBAGENT_STARTED,
      { ...ids, model: child.model, provider: child.provider },
      parent,
    ),
    deps.events.timeline("subagent.started", ids, parent),
  ]);
  return {
    task_id: request.task_id,
    task_type: request.task_type,
    child_session_id: childId,
    parent,
    correlation: fillCorrelation({ session_id: childId, run_id: parent.run_id }),
    generation: request.generation,
    ...hook,
  };
}

export interface SubagentStopRequest {
  success: boolean;
  /** Default `completed` on success, else `error`. */
  status?: string;
  /** Error text on failure ("" on success). */
  error?: string;
  duration_ms: number;
  /**
   * A child the plane never saw start (its start went unreported): `ignore` it (the default), or
   * `record` it as started and stopped now, so its stop still runs.
   */
  unknownChild?: "ignore" | "record";
  signal?: AbortSignal | undefined;
}

export interface SubagentStopResult extends HookResult {
  /** True for the one call that made the child's terminal state durable. */
  stopped: boolean;
}

/**
 * Stops a sub-agent: its terminal result is made durable first (the child's record `completed` or
 * `error`, once); only then SubagentStop runs and `subagent_completed` (or `subagent_failed`) and
 * `subagent.stopped` are published. A second stop returns `stopped: false` and fires nothing.
 */
export async function stopSubagent(
  deps: LifecycleDeps,
  started: Pick<StartedSubagent, "task_id" | "task_type" | "child_session_id" | "parent" | "generation">,
  result: SubagentStopRequest,
): Promise<SubagentStopResult> {
  const status = result.status ?? (result.success ? "completed" : "error");
  const terminal = result.success ? "completed" : "error";
  if (result.unknownChild === "record")
    await deps.sessions.mutate(started.child_session_id, (current) => {
      if (current !== null) throw new KeepRecord();
      const reason = `subagent of ${started.parent.session_id}`.slice(0, 256);
      return { status: "active", reason, generation: 0, model: "", provider: "", updated_at: Date.now() };
    });
  const written = await deps.sessions.end(started.child_session_id, terminal, status.slice(0, 256), {
    ifExists: true,
  });
  if (!written.ended) return { stopped: false, outcome: null };
  const generation = started.generation === undefined ? {} : { generation: started.generation };
  const hook = await invokeLifecycleHook(
    deps,
    HookName.SubagentStop,
    {
      task_id: started.task_id,
      task_type: started.task_type,
      success: result.success,
      status,
      duration_ms: result.duration_ms,
      error: result.error ?? "",
      child_session_key: started.child_session_id,
      ...generation,
    },
    started.parent,
    result.signal,
  );
  const facts = {
    task_id: started.task_id,
    task_type: started.task_type,
    child_session_key: started.child_session_id,
    parent_session_key: started.parent.session_id,
    success: result.success,
    status,
    duration_ms: result.duration_ms,
  };
  await Promise.all([
    deps.events.emit(
      result.success ? RuntimeEvent.SUBAGENT_COMPLETED : RuntimeEvent.SUBAGENT_FAILED,
      facts,
      started.parent,
    ),
    deps.events.timeline("subagent.stopped", facts, started.parent),
  ]);
  return { stopped: true, ...hook };
}
