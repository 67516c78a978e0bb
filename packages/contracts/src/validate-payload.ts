import { describeIssues } from "./errors.js";
import type { HookName } from "./hook-name.js";
import { HookPayloadSchemas } from "./hook-payloads.js";
import { sanitizePayload } from "./sanitize.js";

export type HookValidation = { ok: true; payload: Record<string, unknown> } | { ok: false; error: string };

/**
 * Sanitizes then validates a hook payload: what the dispatcher does to every input and to every
 * rewrite result. Returns the sanitized payload or a readable error.
 */
export function validateHookPayload(hook: HookName, payload: unknown): HookValidation {
  const clean = sanitizePayload(payload);
  const result = HookPayloadSchemas[hook].safeParse(clean);
  if (!result.success) return { ok: false, error: describeIssues(result.error, "payload") };
  return { ok: true, payload: clean };
}

function redactedList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((f): f is string => typeof f === "string") : [];
}

/**
 * Applies a `rewrite` decision: merges `{...payload, ...updates}`, keeps the union of both
 * `_redacted_fields` lists (an update cannot hide what sanitizing dropped), then sanitizes and
 * validates the result again. An invalid result leaves the caller's payload as it was.
 */
export function applyRewrite(
  hook: HookName,
  payload: Record<string, unknown>,
  updates: Record<string, unknown>,
): HookValidation {
  const merged: Record<string, unknown> = { ...payload, ...updates };
  const union = new Set([
    ...redactedList(payload["_redacted_fields"]),
    ...redactedList(updates["_redacted_fields"]),
  ]);
  if (union.size > 0) merged["_redacted_fields"] = [...union];
  else delete merged["_redacted_fields"];
  return validateHookPayload(hook, merged);
}
