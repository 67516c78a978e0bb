import {
  applyRewrite,
  isStoppingAction,
  rewrittenGuardedArguments,
  sanitizeText,
  validateDecision,
} from "@geode/contracts";
import type { RegisteredHandler } from "../handler-registry.js";
import type { ChainStep, ChainView } from "./chain-step.js";
import { handlerFailed } from "./handler-failed.js";

/** Longest `reason` an audit event carries. */
export const AUDIT_REASON_CHARS = 512;

/**
 * Applies one handler's decision: a decision that breaks the hook's rules is a handler error;
 * `null` adds nothing; `null` and every decision that does not stop the chain are audited `ok`,
 * with the handler's `audit_reason` note as the reason (bounded and redacted); a rewrite is merged
 * into the payload and validated again (an invalid result is a handler error and leaves the
 * payload as it was); `block` or `deny` stops the chain.
 */
export function applyDecision(
  view: ChainView,
  h: RegisteredHandler,
  raw: unknown,
  auditReason?: string,
): ChainStep {
  const handler = h.registration.name;
  const check = validateDecision(view.hook, raw);
  if (!check.ok) return handlerFailed(view.hook, h, "InvalidDecision", check.error);
  const decision = check.decision;
  const note = auditReason ? sanitizeText(auditReason, AUDIT_REASON_CHARS) : "";
  if (decision === null) return { handler, status: "ok", reason: note, blocks: false };
  let rewritten: ChainStep["rewritten"];
  if (decision.action === "rewrite" && decision.updates) {
    const merged = applyRewrite(view.hook, view.payload, decision.updates);
    if (!merged.ok) return handlerFailed(view.hook, h, "InvalidRewrite", `invalid rewrite: ${merged.error}`);
    const guarded = view.guarded && rewrittenGuardedArguments(view.guarded, view.payload, merged.payload);
    rewritten = { payload: merged.payload, guarded };
  }
  const attributed = { handler, ...decision };
  if (!isStoppingAction(decision.action))
    return { handler, status: "ok", reason: note, decision: attributed, rewritten, blocks: false };
  const status = decision.action as "block" | "deny";
  const reason = sanitizeText(decision.reason ?? "", AUDIT_REASON_CHARS);
  return { handler, status, reason, decision: attributed, rewritten, blocks: true };
}
