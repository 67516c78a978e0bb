import { closedFailureAction, type HookName } from "@geode/contracts";
import type { RegisteredHandler } from "../handler-registry.js";
import type { ChainStep, HandlerErrorType } from "./chain-step.js";

/**
 * A handler error: recorded as `<handler>: <message>`, audited as `error` with only its type as
 * reason. The chain goes on, except for a `failure_mode: closed` handler, whose error stops it as a
 * `block` (`deny` for PermissionRequest) with the reason `failure_mode closed: <message>`.
 */
export function handlerFailed(
  hook: HookName,
  h: RegisteredHandler,
  type: HandlerErrorType,
  message: string,
): ChainStep {
  const handler = h.registration.name;
  const step = { handler, status: "error", reason: type, error: { type, message } } as const;
  if (h.registration.failure_mode !== "closed") return { ...step, blocks: false };
  const action = closedFailureAction(hook);
  return { ...step, decision: { handler, action, reason: `failure_mode closed: ${message}` }, blocks: true };
}
