import type { RegisteredHandler } from "../handler-registry.js";

/** Whether a handler takes part in a call: called, skipped, or failing closed on its expired lease. */
export type HandlerTurn = "call" | "skip" | "lease_expired";

/**
 * A handler whose `match` does not cover the payload's `tool_name` (as rewritten so far) is not
 * called, and not audited. One whose lease ran out is gone: an `open` one is skipped silently, a
 * `closed` one is a guard that must not be bypassed by crashing, so it fails closed until its
 * registration is deleted.
 */
export function handlerTurn(
  h: RegisteredHandler,
  payload: Record<string, unknown>,
  now = Date.now(),
): HandlerTurn {
  if (h.match) {
    const tool = payload["tool_name"];
    if (typeof tool !== "string" || !h.match(tool)) return "skip";
  }
  const reg = h.registration;
  if (reg.heartbeat_at + reg.lease_ms >= now) return "call";
  return reg.failure_mode === "closed" ? "lease_expired" : "skip";
}
