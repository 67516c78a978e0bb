import { closedFailureAction } from "@geode/contracts";
import type { RegisteredHandler } from "../handler-registry.js";
import type { HandlerErrorType } from "./call-handler.js";
import type { ChainRun } from "./chain-run.js";

/**
 * A handler error: recorded as `<handler>: <message>`, audited as `error` with only its type as
 * reason. The chain goes on, except for a `failure_mode: closed` handler, whose error stops it as a
 * `block` (`deny` for PermissionRequest) with the reason `failure_mode closed: <message>`.
 * Returns true when the chain must stop.
 */
export function handlerFailed(
  run: ChainRun,
  h: RegisteredHandler,
  type: HandlerErrorType,
  message: string,
  startedAt: number,
): boolean {
  const name = h.registration.name;
  run.errors.push(`${name}: ${message}`);
  run.audit(name, "error", type, startedAt);
  run.ctx.log.warn(
    { hook: run.hook, handler: name, error_type: type, ...run.input.correlation },
    "hook handler failed",
  );
  if (h.registration.failure_mode !== "closed") return false;
  run.decide({
    handler: name,
    action: closedFailureAction(run.hook),
    reason: `failure_mode closed: ${message}`,
  });
  run.blocked = true;
  return true;
}
