import { requestJson } from "@geode/bus";
import {
  type CorrelationInput,
  type DispatchOutcome,
  DispatchOutcomeSchema,
  ErrorCode,
  GeodeError,
  type HookName,
  type HookPayloadInput,
  type Names,
} from "@geode/contracts";
import type { NatsConnection } from "@nats-io/transport-node";

export interface InvokeOptions {
  /** The caller's whole budget in ms (default 30 s); the dispatcher stops when it passes. */
  timeoutMs?: number;
  /** Cancels the invocation; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
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
 * dispatcher is GeodeError `unavailable`.
 */
export function createHookClient(nc: NatsConnection, n: Names): HookClient {
  return {
    async invoke(hook, payload, correlation = {}, options = {}) {
      const timeoutMs = options.timeoutMs ?? DEFAULT_INVOKE_TIMEOUT_MS;
      const body = await requestJson(
        nc,
        n.hookInvoke(hook),
        { correlation, payload, timeout_ms: timeoutMs },
        // A little slack beyond the budget so the dispatcher's own timeout reply can arrive.
        { timeoutMs: timeoutMs + 250, signal: options.signal },
      );
      const parsed = DispatchOutcomeSchema.safeParse(body);
      if (!parsed.success)
        throw new GeodeError(ErrorCode.Internal, "malformed dispatch outcome from hook-dispatcher");
      return parsed.data;
    },
  };
}
