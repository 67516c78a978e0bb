import { z } from "zod";
import { maskSecrets, sha256 } from "./sanitize.js";

const nonNegativeInt = z.number().int().min(0);

/** Correlation v2: exactly these nine fields, all required, in this order. */
export const CorrelationV2Schema = z.strictObject({
  session_id: z.string(),
  turn_id: z.string(),
  step_id: z.string(),
  run_id: z.string(),
  session_generation: nonNegativeInt,
  verify_attempt: nonNegativeInt,
  tool_call_id: z.string(),
  llm_call_id: z.string(),
  llm_attempt_id: z.string(),
});
export type Correlation = z.infer<typeof CorrelationV2Schema>;

/** Correlation v1: v2 without `step_id`. */
export const CorrelationV1Schema = CorrelationV2Schema.omit({ step_id: true });
export type CorrelationV1 = z.infer<typeof CorrelationV1Schema>;

export const CORRELATION_FIELDS = Object.keys(CorrelationV2Schema.shape) as (keyof Correlation)[];

/**
 * Correlation as callers send it: any field may be left out and defaults to `""` or `0`;
 * unknown fields are still refused.
 */
export const CorrelationInputSchema = z.strictObject({
  session_id: z.string().default(""),
  turn_id: z.string().default(""),
  step_id: z.string().default(""),
  run_id: z.string().default(""),
  session_generation: nonNegativeInt.default(0),
  verify_attempt: nonNegativeInt.default(0),
  tool_call_id: z.string().default(""),
  llm_call_id: z.string().default(""),
  llm_attempt_id: z.string().default(""),
});
export type CorrelationInput = z.input<typeof CorrelationInputSchema>;

/** Fills the defaults of a partial correlation (throws on unknown fields or wrong types). */
export function correlation(input: CorrelationInput = {}): Correlation {
  // Fast path for the common case on hot paths (events, hook chains): an already complete
  // correlation is copied without a schema pass.
  if (isCompleteCorrelation(input)) return { ...input };
  return CorrelationInputSchema.parse(input);
}

/** The id fields (strings), as the schema declares them. */
const STRING_FIELDS = CORRELATION_FIELDS.filter(
  (f) => CorrelationV2Schema.shape[f] instanceof z.ZodString,
) as Array<Exclude<keyof Correlation, "session_generation" | "verify_attempt">>;

/** True for a correlation with exactly the v2 fields, each of its type: what the schema takes as is. */
export function isCompleteCorrelation(input: CorrelationInput): input is Correlation {
  const o = input as Record<string, unknown>;
  if (Object.keys(o).length !== 9) return false;
  for (const f of STRING_FIELDS) if (typeof o[f] !== "string") return false;
  const g = o["session_generation"];
  const v = o["verify_attempt"];
  return Number.isSafeInteger(g) && (g as number) >= 0 && Number.isSafeInteger(v) && (v as number) >= 0;
}

export function toCorrelationV1(c: Correlation): CorrelationV1 {
  const { step_id: _drop, ...rest } = c;
  return rest;
}

/**
 * What an id may be to be kept as it came (at most 128 characters): safe as a KV key token, a
 * file name and a log field.
 */
const SAFE_ID = /^[A-Za-z0-9_.:@+=-]{1,128}$/;

/**
 * A correlation id from outside the plane (an agent's session, prompt or tool-call id) as the
 * plane keeps it: as it came when it is at most 128 characters of `[A-Za-z0-9_.:@+=-]`, starts
 * with no dot and looks like no secret (the payloads' secret patterns); otherwise
 * `redacted-<24 hex digits of its SHA-256>`, the same for the same id, so a session stays one
 * session while its id (a secret, a path, a control character) is stored, logged and shown nowhere.
 */
export function safeCorrelationId(id: string): string {
  if (id === "" || (SAFE_ID.test(id) && id[0] !== "." && maskSecrets(id) === id)) return id;
  return `redacted-${sha256(id).slice(0, 24)}`;
}

/** A correlation with every id made safe by `safeCorrelationId` (the counters as they are). */
export function safeCorrelation(c: Correlation): Correlation {
  const out = { ...c };
  for (const f of STRING_FIELDS) out[f] = safeCorrelationId(c[f]);
  return out;
}
