import { maskSecrets, SECRET_KEYS } from "./sanitize.js";

const REDACTED = "[REDACTED]";
/** Past this depth a value is kept as its masked JSON text (no stack grows with the input). */
const MAX_DEPTH = 64;

/**
 * A JSON value with its secrets masked and nothing else changed: secret-looking strings masked
 * (as sanitizing does), values under secret-named keys (`password`, `token`, …) replaced by
 * `[REDACTED]`, every other string, number, key and length kept. For what is stored in KV from
 * the wire and read back in full (a tool's result in its receipt), where sanitizing's bounds
 * would change what a replay returns.
 */
export function maskSecretsDeep<T>(value: T): T {
  return mask(value, 0) as T;
}

function mask(value: unknown, depth: number): unknown {
  if (typeof value === "string") return maskSecrets(value);
  if (value === null || typeof value !== "object") return value;
  if (depth >= MAX_DEPTH) return maskSecrets(JSON.stringify(value) ?? "");
  if (Array.isArray(value)) return value.map((v) => mask(v, depth + 1));
  // Entries, not an object literal: a key named `__proto__` stays a key.
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => [
      k,
      SECRET_KEYS.has(k.toLowerCase()) && v !== null && v !== undefined ? REDACTED : mask(v, depth + 1),
    ]),
  );
}
