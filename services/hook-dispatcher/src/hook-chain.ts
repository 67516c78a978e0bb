import type { DispatchOutcome } from "@geode/contracts";
import { applyDecision } from "./chain/apply-decision.js";
import { callHandler } from "./chain/call-handler.js";
import { type ChainContext, type ChainInput, ChainRun } from "./chain/chain-run.js";
import { handlerFailed } from "./chain/handler-failed.js";
import { handlerTurn } from "./chain/handler-turn.js";
import { refuseOversize } from "./chain/refuse-oversize.js";

export { AUDIT_REASON_CHARS } from "./chain/apply-decision.js";
export type { HandlerErrorType } from "./chain/call-handler.js";
export type { ChainContext, ChainInput } from "./chain/chain-run.js";

/**
 * Runs the handler chain of one invocation and composes the outcome (docs/architecture.md, "A
 * hook call"): a tool call a closed guard could not see whole is refused first; handlers in
 * ascending priority (ties by name), each seeing the payload as rewritten before it; match and lease decide who is called; a handler error goes on, or stops
 * the chain for a closed handler; `block` or `deny` stops it.
 */
export async function runChain(ctx: ChainContext, input: ChainInput): Promise<DispatchOutcome> {
  const run = new ChainRun(ctx, input);
  const handlers = ctx.registry.handlers(input.hook);
  if (refuseOversize(run, handlers)) return run.outcome();
  for (const h of handlers) {
    const turn = handlerTurn(h, run.payload);
    if (turn === "skip") continue;
    const startedAt = performance.now();
    if (turn === "lease_expired") {
      handlerFailed(run, h, "LeaseExpired", "lease expired", startedAt);
      break;
    }
    const reply = await callHandler(run, h, startedAt);
    const stop = reply.ok
      ? applyDecision(run, h, reply.decision, startedAt, reply.auditReason)
      : handlerFailed(run, h, reply.type, reply.message, startedAt);
    if (stop) break;
  }
  return run.outcome();
}
