/**
 * Everything the gateway asks of the plane over NATS, in one place: invoke a hook, verify a
 * candidate, ask a human approver, publish events and timeline records, keep session and run
 * records, and follow the agents bucket. The rest of the gateway sees only this interface.
 */
import {
  createHookClient,
  type Logger,
  metrics,
  RequestFailedError,
  type RuntimeEventBus,
  requestJson,
} from "@geode/bus";
import {
  type AgentRecord,
  ApprovalLeg,
  type ApprovalReply,
  type ApprovalRequest,
  type Correlation,
  type DispatchOutcome,
  type HookName,
  type HookPayloadInput,
  isMalformedReply,
  type Names,
  type RuntimeEvent,
  type SessionRecord,
  type TimelineKind,
  VerifyFinalizeLeg,
  type VerifyFinalizeRequest,
  type VerifyReply,
} from "@geode/contracts";
import { AgentStore, RunStore, SessionStore } from "@geode/state";
import type { NatsConnection } from "@nats-io/transport-node";

export { KeepRecord } from "@geode/state";

/** A human approver's answer, or why there was none. */
type ApprovalAnswer =
  | (ApprovalReply & { source: "approver" })
  | { source: "no_approver" | "timeout" | "invalid_reply" | "error"; reason: string };

interface CallOptions {
  signal?: AbortSignal | undefined;
}

export interface Plane {
  readonly names: Names;
  /** Invokes a public hook through the hook-dispatcher (cancelled with `signal`). */
  invokeHook<H extends HookName>(
    hook: H,
    payload: HookPayloadInput<H>,
    correlation: Correlation,
    options?: CallOptions,
  ): Promise<DispatchOutcome>;
  /** `{ns}.verify.finalize`. */
  finalize(request: VerifyFinalizeRequest, options?: CallOptions): Promise<VerifyReply>;
  /** `{ns}.approval.request` (queue group `approvers`; the first reply wins). */
  requestApproval(request: ApprovalRequest, options?: CallOptions): Promise<ApprovalAnswer>;
  /**
   * Publishes a runtime event (never throws; the bus logs and counts failures). With a batching
   * bus it waits in the outbox until after the answer, or until the plane's next request below,
   * which sends the outbox first: an event still reaches its stream before the step it precedes.
   */
  emit(event: RuntimeEvent, payload: Record<string, unknown>, correlation: Correlation, id?: string): void;
  /** Publishes a timeline record (never throws); one `id` is stored once. */
  timeline(kind: TimelineKind, payload: Record<string, unknown>, correlation: Correlation, id?: string): void;
  /** Revision-checked update of a session record (KV `{ns}_sessions`); throw `KeepRecord` to keep it. */
  mutateSession(
    sessionId: string,
    update: (current: SessionRecord | null) => SessionRecord,
  ): Promise<{ written: boolean; value: SessionRecord | null }>;
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
  nc: NatsConnection;
  names: Names;
  events: RuntimeEventBus;
  log: Logger;
  hookTimeoutMs: number;
  verifyTimeoutMs: number;
  approvalTimeoutMs: number;
}

export async function createPlane(options: PlaneOptions): Promise<Plane> {
  const { nc, names: n, events, log } = options;
  const conn = { nc, names: n };
  const [sessions, runs, agents] = await Promise.all([
    SessionStore.open(conn),
    RunStore.open(conn),
    AgentStore.open(conn),
  ]);
  const hooks = createHookClient(nc, n);
  let up = true;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") up = false;
      else if (s.type === "reconnect") up = true;
    }
  })().catch(() => undefined);

  return {
    names: n,

    invokeHook(hook, payload, correlation, callOptions = {}) {
      events.sendQueued();
      return hooks.invoke(hook, payload, correlation, {
        timeoutMs: options.hookTimeoutMs,
        ...(callOptions.signal ? { signal: callOptions.signal } : {}),
      });
    },

    finalize(request, callOptions = {}) {
      events.sendQueued();
      return requestJson(nc, n.verifyFinalize, VerifyFinalizeLeg.request.encode(request), {
        timeoutMs: options.verifyTimeoutMs,
        signal: callOptions.signal,
        reply: VerifyFinalizeLeg.reply,
      });
    },

    async requestApproval(request, callOptions = {}) {
      events.sendQueued();
      const timeoutMs = Math.max(1, options.approvalTimeoutMs);
      metrics().approvalPending(1);
      try {
        const reply = await requestJson(nc, n.approvalRequest, ApprovalLeg.request.encode(request), {
          timeoutMs,
          signal: callOptions.signal,
          reply: ApprovalLeg.reply,
        });
        return { ...reply, source: "approver" };
      } catch (err) {
        if (isMalformedReply(err)) return { source: "invalid_reply", reason: "invalid approver reply" };
        if (err instanceof RequestFailedError && err.failure === "no_responders")
          return { source: "no_approver", reason: "no approver available" };
        if (err instanceof RequestFailedError && err.failure === "timeout")
          return { source: "timeout", reason: `no approval within ${timeoutMs} ms` };
        if (callOptions.signal?.aborted) throw err;
        return { source: "error", reason: err instanceof Error ? err.message : String(err) };
      } finally {
        metrics().approvalPending(-1);
      }
    },

    emit(event, payload, correlation, id) {
      void events.emit(event, payload, correlation, id === undefined ? {} : { id });
    },

    timeline(kind, payload, correlation, id) {
      void events.timeline(kind, payload, correlation, id === undefined ? {} : { id });
    },

    async mutateSession(sessionId, update) {
      events.sendQueued();
      const r = await sessions.mutate(sessionId, update);
      return { written: r.written, value: r.value };
    },

    async openRun(runId) {
      events.sendQueued();
      await runs.open(runId);
    },

    async closeRun(runId) {
      events.sendQueued();
      await runs.close(runId);
    },

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

    connected: () => up && !nc.isClosed(),
  };
}
