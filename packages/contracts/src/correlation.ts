import { z } from "zod";
import { maskSecrets, sha256 } from "./sanitize.js";
import { compiledCheck } from "./schema-compiler.js";
import { wellFormed } from "./well-formed.js";

const id = z.string();
const counter = z.number().int().min(0);

/** The nine correlation fields, in wire order: ids are strings, the two counters non-negative integers. */
const CORRELATION_SHAPE = {
  session_id: id,
  turn_id: id,
  step_id: id,
  run_id: id,
  session_generation: counter,
  verify_attempt: counter,
  tool_call_id: id,
  llm_call_id: id,
  llm_attempt_id: id,
};
type CorrelationShape = typeof CORRELATION_SHAPE;

/** Correlation v2: exactly the nine fields, all required, in this order. */
export const CorrelationV2Schema = z.strictObject(CORRELATION_SHAPE);
export type Correlation = z.infer<typeof CorrelationV2Schema>;

/** Correlation v1: v2 without `step_id`. */
export const CorrelationV1Schema = CorrelationV2Schema.omit({ step_id: true });
export type CorrelationV1 = z.infer<typeof CorrelationV1Schema>;

export const CORRELATION_FIELDS = Object.keys(CORRELATION_SHAPE) as (keyof Correlation)[];

/** The id fields (the strings). */
const STRING_FIELDS = CORRELATION_FIELDS.filter((f) => CORRELATION_SHAPE[f] === id) as Array<
  { [K in keyof Correlation]: Correlation[K] extends string ? K : never }[keyof Correlation]
>;

/**
 * Correlation as callers send it: any field may be left out and defaults to `""` (an id) or `0`
 * (a counter); unknown fields are still refused.
 */
export const CorrelationInputSchema = z.strictObject(
  Object.fromEntries(
    CORRELATION_FIELDS.map((f) => [f, CORRELATION_SHAPE[f] === id ? id.default("") : counter.default(0)]),
  ) as { [K in keyof CorrelationShape]: z.ZodDefault<CorrelationShape[K]> },
);
export type CorrelationInput = z.input<typeof CorrelationInputSchema>;

/** A request's correlation: partial as callers send it, or left out for the empty one. */
export const RequestCorrelationSchema = CorrelationInputSchema.default(CorrelationInputSchema.parse({}));

/** A complete correlation, which the schema would take as it is (see `compiledCheck`). */
const isComplete = compiledCheck(CorrelationV2Schema);

/**
 * Fills the defaults of a partial correlation (throws on unknown fields or wrong types). Every id
 * comes out valid Unicode (a lone surrogate becomes U+FFFD), as everything the plane publishes.
 */
export function correlation(input: CorrelationInput = {}): Correlation {
  // On hot paths (events, hook chains) the correlation is complete: a copy, no schema pass.
  const out = isComplete(input) ? { ...input } : CorrelationInputSchema.parse(input);
  for (const f of STRING_FIELDS) out[f] = wellFormed(out[f]);
  return out;
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
