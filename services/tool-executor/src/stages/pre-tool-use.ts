import { decisionReason, isBlocked, type ToolExecuteReply } from "@geode/contracts";
import { checkCall } from "./policy.js";
import { refuse, type ToolCall } from "./tool-call.js";

/**
 * PreToolUse: `block` stops the call; a `rewrite` is checked again like the original (policy, then
 * the tool's schema); `request_permission` is left for the approval stage.
 */
export async function preToolUse(call: ToolCall): Promise<ToolExecuteReply | undefined> {
  const outcome = await call.invokeBeforeEffect("PreToolUse", {
    tool_name: call.definition.name,
    arguments: call.args,
  });
  call.preToolUse = outcome;
  if (isBlocked(outcome)) {
    return refuse(call, "blocked", decisionReason(outcome, ["block"], "blocked"), {
      name: call.definition.name,
      args: call.args,
    });
  }
  if (!outcome.decisions.some((d) => d.action === "rewrite")) return undefined;
  const rewritten = restoreRedacted(outcome.payload["arguments"] as Record<string, unknown>, call.args);
  return checkCall(call, String(outcome.payload["tool_name"]), rewritten, "PreToolUse rewrite");
}

/**
 * Handlers see arguments with secret-named keys removed (listed in `_redacted_fields`); a rewrite
 * built from what they saw would silently drop them. Put the caller's values back for keys the
 * rewrite did not set, and drop the marker the caller never sent.
 */
export function restoreRedacted(
  rewritten: Record<string, unknown>,
  original: Record<string, unknown>,
): Record<string, unknown> {
  const redacted = rewritten["_redacted_fields"];
  if (!Array.isArray(redacted)) return rewritten;
  // A Map, not an object literal: a key named `__proto__` stays a key, never the prototype.
  const out = new Map(Object.entries(rewritten));
  if (!Object.hasOwn(original, "_redacted_fields")) out.delete("_redacted_fields");
  for (const key of redacted)
    if (typeof key === "string" && !out.has(key) && Object.hasOwn(original, key)) out.set(key, original[key]);
  return Object.fromEntries(out);
}
