import { closedFailureAction, GUARDED_INPUT_TOO_LARGE, HookName } from "@geode/contracts";
import type { RegisteredHandler } from "../handler-registry.js";
import type { ChainStep, ChainView } from "./chain-step.js";
import { handlerTurn } from "./handler-turn.js";

/**
 * A PreToolUse or PermissionRequest whose guarded facts exceed what a guard can see (a command
 * over 64 KiB, too many paths) is refused before any handler runs when a `failure_mode: closed`
 * handler takes part in it: a guard that must not fail open must not decide on a part of what
 * runs either. The refusal is that guard's (`block`, `deny` for PermissionRequest), audited as
 * such. An open handler's chain goes on with the facts cut. Returns the refusal, or undefined.
 */
export function refuseOversize(
  view: ChainView,
  handlers: readonly RegisteredHandler[],
): ChainStep | undefined {
  if (view.hook !== HookName.PreToolUse && view.hook !== HookName.PermissionRequest) return undefined;
  if (!view.guarded || view.guarded.oversize.length === 0) return undefined;
  const guard = handlers.find(
    (h) => h.registration.failure_mode === "closed" && handlerTurn(h, view.payload) !== "skip",
  );
  if (!guard) return undefined;
  const handler = guard.registration.name;
  const action = closedFailureAction(view.hook);
  return {
    handler,
    status: action,
    reason: GUARDED_INPUT_TOO_LARGE,
    decision: { handler, action, reason: GUARDED_INPUT_TOO_LARGE },
    blocks: true,
  };
}
