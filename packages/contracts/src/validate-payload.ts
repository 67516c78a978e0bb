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
