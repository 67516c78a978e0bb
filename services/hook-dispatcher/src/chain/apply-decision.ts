import {
  applyRewrite,
  isStoppingAction,
  rewrittenGuardedArguments,
  sanitizeText,
  validateDecision,
} from "@geode/contracts";
import type { RegisteredHandler } from "../handler-registry.js";
import type { ChainRun } from "./chain-run.js";
import { handlerFailed } from "./handler-failed.js";

/** Longest `reason` an audit event carries. */
export const AUDIT_REASON_CHARS = 512;

/**
 * Applies one handler's decision: a decision that breaks the hook's rules is a handler error;
 * `null` adds nothing; `null` and every decision that does not stop the chain are audited `ok`,
 * with the handler's `audit_reason` note as the reason (bounded and redacted); a rewrite is merged into the payload and validated again (an
 * invalid result is a handler error and leaves the payload as it was); `block` or `deny` stops
 * the chain. Returns true when the chain must stop.
 */
export function applyDecision(
  run: ChainRun,
  h: RegisteredHandler,
  raw: unknown,
  startedAt: number,
  auditReason?: string,
): boolean {
  const name = h.registration.name;
  const check = validateDecision(run.hook, raw);
  if (!check.ok) return handlerFailed(run, h, "InvalidDecision", check.error, startedAt);
  const decision = check.decision;
  const note = auditReason ? sanitizeText(auditReason, AUDIT_REASON_CHARS) : "";
  if (decision === null) {
    run.audit(name, "ok", note, startedAt);
    return false;
  }
  if (decision.action === "rewrite" && decision.updates) {
    const rewritten = applyRewrite(run.hook, run.payload, decision.updates);
    if (!rewritten.ok)
      return handlerFailed(run, h, "InvalidRewrite", `invalid rewrite: ${rewritten.error}`, startedAt);
    if (run.guarded) run.guarded = rewrittenGuardedArguments(run.guarded, run.payload, rewritten.payload);
    run.payload = rewritten.payload;
  }
  run.decide({ handler: name, ...decision });
  if (!isStoppingAction(decision.action)) {
    run.audit(name, "ok", note, startedAt);
    return false;
  }
  const reason = sanitizeText(decision.reason ?? "", AUDIT_REASON_CHARS);
  run.audit(name, decision.action as "block" | "deny", reason, startedAt);
  run.blocked = true;
  return true;
}
