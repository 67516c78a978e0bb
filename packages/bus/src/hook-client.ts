import {
  type CorrelationInput,
  type DispatchOutcome,
  type GuardedArguments,
  HookInvokeLeg,
  type HookName,
  type HookPayloadInput,
  INVOCATION_ID_HEADER,
  type Names,
} from "@geode/contracts";
import { headers, nuid } from "@nats-io/transport-node";
import { type BusConnection, busParts } from "./interceptors.js";
import { retryNoResponders } from "./no-responders-grace.js";
import { requestJson } from "./request.js";

export interface InvokeOptions {
  /** The caller's whole budget in ms (default 30 s); the dispatcher stops when it passes. */
  timeoutMs?: number;
  /**
   * Cancels the invocation: the promise rejects with the signal's reason at once, and the
   * dispatcher is told (`{ns}.hook.cancel.{id}`) so it stops the chain and audits the running
   * handler as `error` / `Cancelled`.
   */
  signal?: AbortSignal;
  /**
   * PermissionRequest: the guarded facts of the call's whole input (`guardedArguments`), which
   * its payload's bounded `detail` cannot carry.
   */
  guarded?: GuardedArguments;
}

/** Invokes public hooks through the hook-dispatcher and returns typed outcomes. */
export interface HookClient {
  invoke<H extends HookName>(
    hook: H,
    payload: HookPayloadInput<H>,
    correlation?: CorrelationInput,
    options?: InvokeOptions,
  ): Promise<DispatchOutcome>;
}

export const DEFAULT_INVOKE_TIMEOUT_MS = 30_000;

/**
 * `hooks.invoke(HookName.X, payload, correlation, { timeoutMs, signal })`. Error replies are rebuilt
 * as GeodeError (`invalid_payload`, `unknown_hook`, …); a timeout is GeodeError `timeout`; no
 * dispatcher is GeodeError `unavailable`, once none has answered for NO_RESPONDERS_GRACE_MS (a dispatcher
 * restarting or reconnecting to another cluster node is absent for a moment; nothing received the
 * request, so it is sent again). The one client of the hook invoke leg: runtimes and the
 * services that invoke hooks (tool-executor, verifier, agent gateway) all use it.
 */
export function createHookClient(conn: BusConnection, n: Names): HookClient {
  const { nc } = busParts(conn);
  return {
    async invoke(hook, payload, correlation = {}, options = {}) {
      const timeoutMs = options.timeoutMs ?? DEFAULT_INVOKE_TIMEOUT_MS;
      const { signal } = options;
      let h: ReturnType<typeof headers> | undefined;
      let onAbort: (() => void) | undefined;
      if (signal && !signal.aborted) {
        const id = nuid.next();
        h = headers();
        h.set(INVOCATION_ID_HEADER, id);
        onAbort = () => {
          if (!nc.isClosed()) nc.publish(n.hookCancel(id));
        };
        signal.addEventListener("abort", onAbort, { once: true });
      }
      const deadline = Date.now() + timeoutMs;
      try {
        // A dispatcher restarting or moving to another cluster node is absent for a moment.
        return await retryNoResponders(
          (remainingMs) =>
            requestJson(
              conn,
              n.hookInvoke(hook),
              HookInvokeLeg.request.encode({
                correlation,
                payload,
                timeout_ms: remainingMs,
                ...(options.guarded ? { guarded: options.guarded } : {}),
              }),
              // A little slack beyond the budget so the dispatcher's own timeout reply can arrive.
              {
                timeoutMs: remainingMs + 250,
                signal,
                reply: HookInvokeLeg.reply,
                ...(h ? { headers: h } : {}),
              },
            ),
          { deadline, signal },
        );
      } finally {
        if (onAbort) signal?.removeEventListener("abort", onAbort);
      }
    },
  };
}
