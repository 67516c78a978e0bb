import { closedFailureAction, GUARDED_INPUT_TOO_LARGE, HookName } from "@geode/contracts";
import type { RegisteredHandler } from "../handler-registry.js";
import type { ChainRun } from "./chain-run.js";
import { handlerTurn } from "./handler-turn.js";

/**
 * A PreToolUse or PermissionRequest whose guarded facts exceed what a guard can see (a command
 * over 64 KiB, too many paths) is refused before any handler runs when a `failure_mode: closed`
 * handler takes part in it: a guard that must not fail open must not decide on a part of what
 * runs either. The refusal is that guard's (`block`, `deny` for PermissionRequest), audited as
 * such. An open handler's chain goes on with the facts cut. Returns true when the call is refused.
 */
export function refuseOversize(run: ChainRun, handlers: readonly RegisteredHandler[]): boolean {
  if (run.hook !== HookName.PreToolUse && run.hook !== HookName.PermissionRequest) return false;
  if (!run.guarded || run.guarded.oversize.length === 0) return false;
  const guard = handlers.find(
    (h) => h.registration.failure_mode === "closed" && handlerTurn(h, run.payload) !== "skip",
  );
  if (!guard) return false;
  const startedAt = performance.now();
  const action = closedFailureAction(run.hook);
  run.decide({ handler: guard.registration.name, action, reason: GUARDED_INPUT_TOO_LARGE });
  run.audit(guard.registration.name, action, GUARDED_INPUT_TOO_LARGE, startedAt);
  run.blocked = true;
  return true;
}
