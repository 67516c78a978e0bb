import { isDeepStrictEqual } from "node:util";
import { sanitizeJson, sanitizePayload } from "@geode/contracts";

/** Keys sanitizing adds to an object; they are never part of a tool's input. */
const MARKERS = new Set(["_redacted_fields", "_truncated_items"]);

/** Sanitizing is not idempotent on cut strings (the cut adds a suffix); its fixpoint is. */
function settled(value: unknown): unknown {
  let current = value;
  for (let i = 0; i < 4; i++) {
    const next = sanitizeJson(current);
    if (isDeepStrictEqual(next, current)) return current;
    current = next;
  }
  return current;
}

/** The arguments of a PreToolUse payload as the hook-dispatcher's sanitizing hands them to handlers. */
export function argumentsAsSeen(toolName: string, args: Record<string, unknown>): Record<string, unknown> {
  return sanitizePayload({ tool_name: toolName, arguments: args })["arguments"] as Record<string, unknown>;
}

/**
 * The tool input Claude Code should run after a PreToolUse rewrite, or null when it is unchanged.
 * Handlers saw the input sanitized (long strings cut, secret-named keys dropped, secret-looking
 * values masked), so a key whose value the rewrite left as they saw it keeps Claude Code's
 * original value, a key the rewrite set or changed takes its new value, a key it removed is
 * removed, and keys the handlers never saw are kept.
 */
export function updatedToolInput(
  original: Record<string, unknown>,
  seen: Record<string, unknown>,
  rewritten: Record<string, unknown>,
): Record<string, unknown> | null {
  // A Map, not an object literal: a key named `__proto__` stays a key, never the prototype.
  const out = new Map<string, unknown>();
  for (const [k, v] of Object.entries(original)) {
    if (Object.hasOwn(rewritten, k)) continue;
    if (Object.hasOwn(seen, k)) continue; // removed by the rewrite
    out.set(k, v); // never seen by a handler (redacted, or cut with its object)
  }
  for (const [k, v] of Object.entries(rewritten)) {
    if (MARKERS.has(k) && !Object.hasOwn(original, k)) continue;
    const unchanged = Object.hasOwn(seen, k) && isDeepStrictEqual(settled(v), settled(seen[k]));
    if (unchanged) {
      if (Object.hasOwn(original, k)) out.set(k, original[k]);
      continue; // an unchanged sanitizer artifact
    }
    out.set(k, v);
  }
  const input = Object.fromEntries(out);
  return isDeepStrictEqual(input, original) ? null : input;
}
