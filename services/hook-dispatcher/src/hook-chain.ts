import { type AttributedDecision, type DispatchOutcome, SchemaVersion } from "@geode/contracts";
import { applyDecision } from "./chain/apply-decision.js";
import { type CallResult, callHandler } from "./chain/call-handler.js";
import type { ChainContext, ChainInput, ChainStep, ChainView } from "./chain/chain-step.js";
import { handlerFailed } from "./chain/handler-failed.js";
import { handlerTurn } from "./chain/handler-turn.js";
import { refuseOversize } from "./chain/refuse-oversize.js";
import type { RegisteredHandler } from "./handler-registry.js";

export { AUDIT_REASON_CHARS } from "./chain/apply-decision.js";
export type { ChainContext, ChainInput, HandlerErrorType } from "./chain/chain-step.js";

/**
 * Runs the handler chain of one invocation and folds its steps into the outcome (docs/architecture.md,
 * "A hook call"): a tool call a closed guard could not see whole is refused first; handlers in
 * ascending priority (ties by name), each seeing the payload as rewritten before it; match and
 * lease decide who is called; a handler error goes on, or stops the chain for a closed handler;
 * `block` or `deny` stops it. Each step returns what it adds; only this fold records it.
 */
export async function runChain(ctx: ChainContext, input: ChainInput): Promise<DispatchOutcome> {
  const handlers = ctx.registry.handlers(input.hook);
  let view: ChainView = { hook: input.hook, payload: input.payload, guarded: input.guarded };
  const decisions: AttributedDecision[] = [];
  const errors: string[] = [];
  let blocked = false;
  /** Audits a step and adds it to the outcome; true when the chain stops there. */
  const fold = (step: ChainStep, startedAt: number): boolean => {
    audit(ctx, input, step, startedAt);
    if (step.error) {
      errors.push(`${step.handler}: ${step.error.message}`);
      const fields = { hook: input.hook, handler: step.handler, error_type: step.error.type };
      ctx.log.warn({ ...fields, ...input.correlation }, "hook handler failed");
    }
    if (step.decision) decisions.push(step.decision);
    if (step.rewritten) view = { hook: input.hook, ...step.rewritten };
    if (step.abort) throw step.abort;
    blocked = step.blocks;
    return blocked;
  };
  const refused = refuseOversize(view, handlers);
  if (refused) fold(refused, performance.now());
  else
    for (const h of handlers) {
      const turn = handlerTurn(h, view.payload);
      if (turn === "skip") continue;
      const startedAt = performance.now();
      if (turn === "lease_expired") {
        fold(handlerFailed(input.hook, h, "LeaseExpired", "lease expired"), startedAt);
        break;
      }
      // The audits of the handlers before it go out first, in the same socket write as the call.
      input.audits.publish();
      const reply = await callHandler(ctx.nc, input, view, h);
      if (fold(replyStep(view, h, reply), startedAt)) break;
    }
  return {
    schema_version: SchemaVersion.V2,
    name: input.hook,
    correlation: input.correlation,
    payload: view.payload,
    decisions,
    decision_sources: decisions.map((d) => d.handler),
    handler_errors: errors,
    blocked,
  };
}

/** The step of a handler's reply: its decision applied, its error, or the invocation's end. */
function replyStep(view: ChainView, h: RegisteredHandler, reply: CallResult): ChainStep {
  if (reply.ok) return applyDecision(view, h, reply.decision, reply.auditReason);
  if (reply.abort === undefined) return handlerFailed(view.hook, h, reply.type, reply.message);
  return {
    handler: h.registration.name,
    status: "error",
    reason: reply.type,
    blocks: true,
    abort: reply.abort,
  };
}

/** Records one handler call: its `extension_invoked` (only the status and a bounded reason) and its count. */
function audit(ctx: ChainContext, input: ChainInput, step: ChainStep, startedAt: number): void {
  ctx.observer.handlerCall(input.hook, step.handler, step.status);
  input.audits.add({
    surface: "hook",
    name: input.hook,
    extension: step.handler,
    status: step.status,
    reason: step.reason,
    duration_ms: Math.round((performance.now() - startedAt) * 1000) / 1000,
  });
}
