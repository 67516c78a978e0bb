/**
 * Everything the gateway asks of the plane over NATS, in one place: invoke a hook, verify a
 * candidate, ask a human approver, publish events and timeline records, keep session and run
 * records, and follow the agents bucket. The rest of the gateway sees only this interface.
 */
import {
  type BusConnection,
  busParts,
  createHookClient,
  followConnection,
  type GeodeConnection,
  type HookClient,
  type Logger,
  type RuntimeEventBus,
  requestJson,
} from "@geode/bus";
import {
  type AgentRecord,
  type ApprovalRequest,
  type Correlation,
  type DispatchOutcome,
  type GuardedArguments,
  type HookName,
  type HookPayloadInput,
  type Names,
  type RuntimeEvent,
  type TimelineKind,
  VerifyFinalizeLeg,
  type VerifyFinalizeRequest,
  type VerifyReply,
} from "@geode/contracts";
import { type ApprovalAnswer, type LifecycleDeps, requestApproval } from "@geode/lifecycle";
import type { ServiceObserver } from "@geode/service";
import { AgentStore, RunStore, SessionStore } from "@geode/state";
import type { NatsConnection } from "@nats-io/transport-node";

interface CallOptions {
  signal?: AbortSignal | undefined;
}

interface InvokeHookOptions extends CallOptions {
  /** PermissionRequest: the guarded facts of the call's whole input (`guardedArguments`). */
  guarded?: GuardedArguments | undefined;
}

export interface Plane {
  readonly names: Names;
  /** The bare connection, for KV and JetStream. */
  readonly nc: NatsConnection;
  /** The connection with the gateway's interceptors, for the MCP endpoint's own legs (tool calls, forwards). */
  readonly bus: GeodeConnection;
  /** Invokes a public hook through the hook-dispatcher (cancelled with `signal`). */
  invokeHook<H extends HookName>(
    hook: H,
    payload: HookPayloadInput<H>,
    correlation: Correlation,
    options?: InvokeHookOptions,
  ): Promise<DispatchOutcome>;
  /** `{ns}.verify.finalize`. */
  finalize(request: VerifyFinalizeRequest, options?: CallOptions): Promise<VerifyReply>;
  /** `{ns}.approval.request` (queue group `approvers`; the first reply wins), within `timeoutMs`. */
  approve(
    request: ApprovalRequest,
    options: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<ApprovalAnswer>;
  /** The wait for a human approver. */
  readonly approvalTimeoutMs: number;
  /** Where the gateway reports what only its code sees (governance gaps, pending approvals). */
  readonly observer: ServiceObserver;
  /**
   * The plane as the shared lifecycle steps use it (sessions, sub-agents): its hook client, its
   * events and the sessions bucket, each sending the queued records first.
   */
  readonly lifecycle: LifecycleDeps;
  /**
   * Publishes a runtime event (never throws; the bus logs and counts failures). With a batching
   * bus it waits in the outbox until after the answer, or until the plane's next request below,
   * which sends the outbox first: an event still reaches its stream before the step it precedes.
   */
  emit(event: RuntimeEvent, payload: Record<string, unknown>, correlation: Correlation, id?: string): void;
  /** Publishes a timeline record (never throws); one `id` is stored once. */
  timeline(kind: TimelineKind, payload: Record<string, unknown>, correlation: Correlation, id?: string): void;
  openRun(runId: string): Promise<void>;
  closeRun(runId: string): Promise<void>;
  /**
   * Follows KV `{ns}_agents`: `apply` gets every current entry, then each change (null = deleted);
   * resolves once the current entries were applied.
   */
  followAgents(apply: (name: string, record: AgentRecord | null) => void): Promise<{ stop(): void }>;
  /** Every agent in KV `{ns}_agents` now. */
  listAgents(): Promise<AgentRecord[]>;
  /** True while the NATS connection is up. */
  connected(): boolean;
}

export interface PlaneOptions {
  nc: BusConnection;
  names: Names;
  events: RuntimeEventBus;
  log: Logger;
  hookTimeoutMs: number;
  verifyTimeoutMs: number;
  approvalTimeoutMs: number;
  observer: ServiceObserver;
}

export async function createPlane(options: PlaneOptions): Promise<Plane> {
  const { names: n, events, log } = options;
  const conn: GeodeConnection = { ...busParts(options.nc), names: n };
  const { nc } = conn;
  const [sessions, runs, agents] = await Promise.all([
    SessionStore.open(conn),
    RunStore.open(conn),
    AgentStore.open(conn),
  ]);
  const client = createHookClient(conn, n);
  // Every request the plane makes sends the queued records first: they reach their streams before
  // the step that follows them.
  const calls = sendingQueuedFirst(events, {
    invoke: ((hook, payload, correlation, callOptions = {}) =>
      client.invoke(hook, payload, correlation, {
        timeoutMs: options.hookTimeoutMs,
        ...callOptions,
      })) as HookClient["invoke"],
    finalize: (request: VerifyFinalizeRequest, callOptions: CallOptions = {}) =>
      requestJson(conn, n.verifyFinalize, VerifyFinalizeLeg.request.encode(request), {
        timeoutMs: options.verifyTimeoutMs,
        signal: callOptions.signal,
        reply: VerifyFinalizeLeg.reply,
      }),
    approve: (request: ApprovalRequest, o: { timeoutMs: number; signal?: AbortSignal | undefined }) =>
      requestApproval(conn, request, { ...o, pending: options.observer.approvalPending }),
    mutateSession: (id: string, update: Parameters<SessionStore["mutate"]>[1]) => sessions.mutate(id, update),
    endSession: (...a: Parameters<SessionStore["end"]>) => sessions.end(...a),
    createSession: (...a: Parameters<SessionStore["create"]>) => sessions.create(...a),
    openRun: async (runId: string) => {
      await runs.open(runId);
    },
    closeRun: async (runId: string) => {
      await runs.close(runId);
    },
  });
  const hooks: HookClient = { invoke: calls.invoke };
  const emit: Plane["emit"] = (event, payload, correlation, id) => {
    void events.emit(event, payload, correlation, id === undefined ? {} : { id });
  };
  const timeline: Plane["timeline"] = (kind, payload, correlation, id) => {
    void events.timeline(kind, payload, correlation, id === undefined ? {} : { id });
  };

  return {
    names: n,
    nc,
    bus: conn,

    invokeHook(hook, payload, correlation, callOptions = {}) {
      return hooks.invoke(hook, payload, correlation, {
        ...(callOptions.signal ? { signal: callOptions.signal } : {}),
        ...(callOptions.guarded ? { guarded: callOptions.guarded } : {}),
      });
    },

    finalize: calls.finalize,
    approve: calls.approve,
    approvalTimeoutMs: options.approvalTimeoutMs,
    observer: options.observer,

    lifecycle: {
      hooks,
      events: {
        emit: (event, payload, correlation, o) => emit(event, payload, correlation, o?.id),
        timeline: (kind, payload, correlation, o) => timeline(kind, payload, correlation, o?.id),
      },
      sessions: { mutate: calls.mutateSession, end: calls.endSession, create: calls.createSession },
    },

    emit,
    timeline,
    openRun: calls.openRun,
    closeRun: calls.closeRun,

    ...agentDirectory(agents, log),

    connected: connectionState(nc),
  };
}

/**
 * The plane's one interceptor: each of `calls` sends the records `events` holds queued before it
 * makes its request, so an event reaches its stream before the step it precedes (see `emit`).
 */
function sendingQueuedFirst<T extends Record<string, (...args: never[]) => Promise<unknown>>>(
  events: RuntimeEventBus,
  calls: T,
): T {
  const wrapped = Object.entries(calls).map(([name, call]) => [
    name,
    (...args: never[]) => {
      events.sendQueued();
      return call(...args);
    },
  ]);
  return Object.fromEntries(wrapped) as T;
}

/** Whether the connection is up now: false from a disconnect until the reconnect, and once closed. */
function connectionState(nc: NatsConnection): () => boolean {
  let up = true;
  followConnection(nc, (now) => {
    up = now;
  });
  return () => up && !nc.isClosed();
}

/** The agents of KV `{ns}_agents`, followed and listed; malformed records are logged and skipped. */
function agentDirectory(agents: AgentStore, log: Logger): Pick<Plane, "followAgents" | "listAgents"> {
  return {
    async followAgents(apply) {
      const watch = await agents.watch(
        ({ key, value, malformed }) => {
          if (malformed) log.warn({ key }, "ignoring malformed agent record");
          apply(key, value);
        },
        (err) => log.error({ err }, "agents watch failed"),
      );
      return { stop: () => void watch.stop() };
    },
    listAgents: () => agents.list((key) => log.warn({ key }, "ignoring malformed agent record")),
  };
}
