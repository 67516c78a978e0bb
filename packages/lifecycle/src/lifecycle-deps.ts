import type { HookClient } from "@geode/bus";
import {
  type Correlation,
  type DispatchOutcome,
  type GeodeError,
  type HookName,
  type HookPayloadInput,
  type RuntimeEvent,
  type TimelineKind,
  toGeodeError,
} from "@geode/contracts";
import type { SessionStore } from "@geode/state";

/**
 * Where the lifecycle publishes its events and timeline records. A `RuntimeEventBus` is one (its
 * promises are awaited, so a record is stored before the step it precedes); the agent gateway
 * passes a batching one whose records go out ahead of its next request to the plane.
 */
export interface LifecycleEvents {
  emit(
    event: RuntimeEvent,
    payload: Record<string, unknown>,
    correlation: Correlation,
    options?: { id?: string },
  ): unknown;
  timeline(
    kind: TimelineKind,
    payload: Record<string, unknown>,
    correlation: Correlation,
    options?: { id?: string },
  ): unknown;
}

/** The session records a lifecycle step writes (a `SessionStore`, or one that sends queued events first). */
export type LifecycleSessions = Pick<SessionStore, "mutate" | "end" | "create">;

/** What every lifecycle step works with: the hook client, an event sink and the sessions bucket. */
export interface LifecycleDeps {
  hooks: HookClient;
  events: LifecycleEvents;
  sessions: LifecycleSessions;
  /** Budget of each lifecycle hook invocation (default: the hook client's, 30 s). */
  hookTimeoutMs?: number | undefined;
}

/** A lifecycle hook's outcome, or why it could not run (the durable state changed anyway). */
export interface HookResult {
  outcome: DispatchOutcome | null;
  hookError?: GeodeError;
}

/** Invokes a lifecycle hook; a failure is returned, not thrown (the durable state already changed). */
export async function invokeLifecycleHook<H extends HookName>(
  deps: LifecycleDeps,
  hook: H,
  payload: HookPayloadInput<H>,
  corr: Correlation,
  signal?: AbortSignal,
): Promise<HookResult> {
  try {
    const outcome = await deps.hooks.invoke(hook, payload, corr, {
      ...(deps.hookTimeoutMs ? { timeoutMs: deps.hookTimeoutMs } : {}),
      ...(signal ? { signal } : {}),
    });
    return { outcome };
  } catch (err) {
    // The caller gave up: the step is not finished for it, whatever the plane did.
    if (signal?.aborted) throw err;
    return { outcome: null, hookError: toGeodeError(err) };
  }
}

/** Publishes an event and its timeline record together; resolves once both went out (or were queued). */
export async function record(
  deps: LifecycleDeps,
  event: RuntimeEvent,
  kind: TimelineKind,
  facts: Record<string, unknown>,
  corr: Correlation,
): Promise<void> {
  await Promise.all([deps.events.emit(event, facts, corr), deps.events.timeline(kind, facts, corr)]);
}
