import { createHash } from "node:crypto";
import { wellFormed } from "./well-formed.js";

/** The limits of docs/hooks.md#limits; "characters" are Unicode code points. */
export const SANITIZE_LIMITS = {
  maxStringChars: 4096,
  maxCollectionItems: 64,
  maxDepth: 8,
  maxKeyChars: 128,
  maxPayloadBytes: 32 * 1024,
} as const;

/** Keys dropped wherever they appear (compared case-insensitively). */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  "access_token",
  "api_key",
  "authorization",
  "base64",
  "client_secret",
  "cookie",
  "credential",
  "credentials",
  "headers",
  "password",
  "private_key",
  "raw_request",
  "refresh_token",
  "screenshot",
  "secret",
  "token",
]);

const REDACTED = "[REDACTED]";

const SECRET_VALUE_PATTERNS: ReadonlyArray<[RegExp, string]> = [
  // PEM private keys, whole block.
  [/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g, REDACTED],
  // Bearer tokens keep the scheme word so readers know what was there.
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  // JSON Web Tokens.
  [/\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}/g, REDACTED],
  // Provider API keys: sk-…, sk-ant-…, GitHub, Slack, Google, Stripe-style live keys.
  [/\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{16,}/g, REDACTED],
  [/\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/g, REDACTED],
  [/\bgh[pousr]_[A-Za-z0-9]{20,}/g, REDACTED],
  [/\bgithub_pat_[A-Za-z0-9_]{20,}/g, REDACTED],
  [/\bxox[abprs]-[A-Za-z0-9-]{10,}/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{35}/g, REDACTED],
  // Cloud access keys (AWS key ids).
  [/\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b/g, REDACTED],
  // password=… style pairs (also in URLs, query strings and JSON text: `"password": "…"`).
  [
    /\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?token|client[_-]?secret|token)(["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s&;,'"]+)/gi,
    `$1$2${REDACTED}`,
  ],
  // The same names as command-line flags with the value after a space: `--password hunter2`.
  [
    /(\s-{1,2}(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|token))(\s+)("[^"]*"|'[^']*'|[^\s&;,'"-][^\s&;,'"]*)/gi,
    `$1$2${REDACTED}`,
  ],
  // Credentials in URLs: scheme://user:pass@host
  [/\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, `$1${REDACTED}@`],
];
// A cheap pre-check so ordinary strings skip the regex pass.
const SECRET_HINT =
  /-----BEGIN|bearer|basic |eyJ|sk-|pk-|rk-|_live_|_test_|gh[pousr]_|github_pat_|xox|AIza|AKIA|ASIA|AGPA|AIDA|AROA|passw|pwd|secret|key|token|:\/\//i;

/** Masks secret-looking values inside a string. */
export function maskSecrets(text: string): string {
  if (!SECRET_HINT.test(text)) return text;
  let out = text;
  for (const [pattern, replacement] of SECRET_VALUE_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

function codePointLength(s: string): number {
  // Fast path: without surrogates, UTF-16 length equals code points.
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdbff) n++;
  }
  return n;
}

function sliceCodePoints(s: string, count: number): string {
  let units = 0;
  let seen = 0;
  while (units < s.length && seen < count) {
    const c = s.charCodeAt(units);
    units += c >= 0xd800 && c <= 0xdbff && units + 1 < s.length ? 2 : 1;
    seen++;
  }
  return s.slice(0, units);
}

const TRUNCATED_SUFFIX = /…\[truncated:[0-9]{1,16}\]$/;

/**
 * Keeps the first `max` code points and appends `…[truncated:N]`, N the code points removed. A
 * string already cut to `max` keeps its suffix as it is, so sanitizing twice (a payload bounded
 * before it is sent, then by the dispatcher) gives what sanitizing once gives.
 */
function truncateString(s: string, max: number): string {
  if (s.length <= max) return s;
  const len = codePointLength(s);
  if (len <= max) return s;
  const suffix = TRUNCATED_SUFFIX.exec(s);
  if (suffix && codePointLength(s.slice(0, suffix.index)) <= max) return s;
  return `${sliceCodePoints(s, max)}…[truncated:${len - max}]`;
}

function cleanString(s: string, maxChars: number = SANITIZE_LIMITS.maxStringChars): string {
  return truncateString(maskSecrets(wellFormed(s)), maxChars);
}

function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.toLowerCase());
}

/** Marker that replaces a value nested deeper than the depth limit. */
const MAX_DEPTH_MARKER = { _truncated: "max_depth" } as const;

function sanitizeValue(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "string":
      return cleanString(value);
    case "number":
      return Number.isFinite(value) ? value : String(value);
    case "boolean":
      return value;
    case "bigint":
      return value.toString();
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
  }
  if (value === null) return null;
  if (depth >= SANITIZE_LIMITS.maxDepth) return { ...MAX_DEPTH_MARKER };
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    const n = Math.min(value.length, SANITIZE_LIMITS.maxCollectionItems);
    for (let i = 0; i < n; i++) {
      const v = sanitizeValue(value[i], depth + 1);
      out.push(v === undefined ? null : v);
    }
    return out;
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) return `[binary:${value.byteLength} bytes]`;
  if (value instanceof Map) return sanitizeObject(Object.fromEntries(value), depth);
  if (value instanceof Set) return sanitizeValue([...value], depth);
  return sanitizeObject(value as Record<string, unknown>, depth);
}

function sanitizeObject(obj: Record<string, unknown>, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const redactedFields = new Set<string>();
  // An incoming list (after a rewrite) is untrusted too: names are cut like keys, and the list like
  // any collection, so it cannot smuggle unbounded data past the size limits.
  const previous = obj["_redacted_fields"];
  if (Array.isArray(previous)) {
    for (const f of previous) {
      if (redactedFields.size >= SANITIZE_LIMITS.maxCollectionItems) break;
      if (typeof f === "string")
        redactedFields.add(sliceCodePoints(wellFormed(f), SANITIZE_LIMITS.maxKeyChars));
    }
  }
  let kept = 0;
  let dropped = 0;
  for (const givenKey of Object.keys(obj)) {
    if (givenKey === "_redacted_fields") continue;
    // Keys are text too: a lone surrogate in one becomes U+FFFD like in any value.
    const rawKey = wellFormed(givenKey);
    if (isSecretKey(rawKey)) {
      redactedFields.add(rawKey);
      continue;
    }
    const v = sanitizeValue(obj[givenKey], depth + 1);
    if (v === undefined) continue;
    if (rawKey === "_truncated_items") {
      out[rawKey] = v;
      continue;
    }
    if (kept >= SANITIZE_LIMITS.maxCollectionItems) {
      dropped++;
      continue;
    }
    const key =
      rawKey.length > SANITIZE_LIMITS.maxKeyChars
        ? sliceCodePoints(rawKey, SANITIZE_LIMITS.maxKeyChars)
        : rawKey;
    // `__proto__` from JSON.parse is an own data key; assigning it would set the prototype instead.
    if (key === "__proto__")
      Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
    else out[key] = v;
    kept++;
  }
  if (dropped > 0)
    out["_truncated_items"] =
      (typeof out["_truncated_items"] === "number" ? (out["_truncated_items"] as number) : 0) + dropped;
  if (redactedFields.size > 0)
    out["_redacted_fields"] = [...redactedFields]
      .map((f) => sliceCodePoints(f, SANITIZE_LIMITS.maxKeyChars))
      .sort()
      .slice(0, SANITIZE_LIMITS.maxCollectionItems);
  return out;
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "null", "utf8");
}

function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Bounds one top-level value to `budget` bytes of compact JSON while keeping its JSON type. */
function boundToBudget(value: unknown, budget: number): unknown {
  const json = JSON.stringify(value) ?? "null";
  if (Buffer.byteLength(json, "utf8") <= budget) return value;
  if (typeof value === "string") {
    // Binary search the longest prefix (in code points) whose truncated form fits.
    const len = codePointLength(value);
    let lo = 0;
    let hi = len;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (jsonBytes(truncateString(value, mid)) <= budget) lo = mid;
      else hi = mid - 1;
    }
    return truncateString(value, lo);
  }
  if (Array.isArray(value)) {
    let lo = 0;
    let hi = value.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (jsonBytes(value.slice(0, mid)) <= budget) lo = mid;
      else hi = mid - 1;
    }
    return value.slice(0, lo);
  }
  if (value !== null && typeof value === "object") {
    const marker: { _truncated: true; payload_sha256: string; keys: string[] } = {
      _truncated: true,
      payload_sha256: sha256Hex(json),
      keys: Object.keys(value),
    };
    while (marker.keys.length > 0 && jsonBytes(marker) > budget) marker.keys.pop();
    return marker;
  }
  return value;
}

/**
 * Applies the 32 KiB whole-payload bound: each oversized top-level field gets a fair share.
 * `json`: the payload's compact JSON when the caller has it already.
 */
function boundPayload(
  payload: Record<string, unknown>,
  maxBytes: number,
  json = JSON.stringify(payload),
): Record<string, unknown> {
  if (Buffer.byteLength(json, "utf8") <= maxBytes) return payload;
  const keys = Object.keys(payload);
  const sizes = new Map(keys.map((k) => [k, jsonBytes(payload[k])]));
  // Structural overhead: braces, quotes, colons, commas, keys.
  const overhead = 2 + keys.reduce((n, k) => n + jsonBytes(k) + 2, 0);
  // Small fields are kept whole; never cut `_redacted_fields` (the audit trail of what was dropped).
  let budget = maxBytes - overhead;
  let open = keys.filter((k) => k !== "_redacted_fields");
  if (payload["_redacted_fields"] !== undefined) budget -= sizes.get("_redacted_fields") ?? 0;
  // Water-filling: fields under the fair share keep their size, the rest split what remains.
  for (;;) {
    const share = Math.floor(budget / Math.max(open.length, 1));
    const small = open.filter((k) => (sizes.get(k) ?? 0) <= share);
    if (small.length === 0) break;
    for (const k of small) budget -= sizes.get(k) ?? 0;
    open = open.filter((k) => !small.includes(k));
    if (open.length === 0) break;
  }
  const out: Record<string, unknown> = { ...payload };
  let share = Math.floor(budget / Math.max(open.length, 1));
  for (let attempt = 0; attempt < 8; attempt++) {
    for (const k of open) out[k] = boundToBudget(payload[k], Math.max(share, 0));
    if (jsonBytes(out) <= maxBytes) return out;
    share = Math.floor(share * 0.9);
  }
  return out;
}

export interface SanitizeOptions {
  /** Override the whole-payload byte bound (default 32 KiB). */
  maxPayloadBytes?: number;
}

/**
 * Makes a payload safe to hand to a handler: JSON-safe, size-bounded, secret keys dropped and
 * listed in `_redacted_fields`, secret-looking values masked. Returns a new object; the input is
 * not changed. A non-object input becomes `{}`.
 */
export function sanitizePayload(payload: unknown, options: SanitizeOptions = {}): Record<string, unknown> {
  return sanitizePayloadJson(payload, options).payload;
}

/**
 * `sanitizePayload`, and the result's compact JSON: the bound is measured on that text, so a
 * caller that stores or sends the payload as JSON (the projection's COPY) need not make it again.
 */
export function sanitizePayloadJson(
  payload: unknown,
  options: SanitizeOptions = {},
): { payload: Record<string, unknown>; json: string } {
  const base =
    payload !== null && typeof payload === "object" && !Array.isArray(payload)
      ? (sanitizeObject(payload as Record<string, unknown>, 0) as Record<string, unknown>)
      : {};
  const json = JSON.stringify(base);
  const bounded = boundPayload(base, options.maxPayloadBytes ?? SANITIZE_LIMITS.maxPayloadBytes, json);
  return { payload: bounded, json: bounded === base ? json : JSON.stringify(bounded) };
}

/** Sanitizes any JSON-ish value with the same rules (strings, collections, depth, secrets). */
export function sanitizeJson(value: unknown): unknown {
  return sanitizeValue(value, 0);
}

/** Masks secrets and cuts a free-text field to `maxChars` code points (used for reasons). */
export function sanitizeText(text: string, maxChars: number): string {
  return cleanString(text, maxChars);
}

/** SHA-256 hex of compact JSON (or of a string as is). */
export function sha256(value: unknown): string {
  return sha256Hex(typeof value === "string" ? value : (JSON.stringify(value) ?? "null"));
}
