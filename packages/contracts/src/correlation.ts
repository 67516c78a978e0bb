import { z } from "zod";

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
  return CorrelationInputSchema.parse(input);
}

export function toCorrelationV1(c: Correlation): CorrelationV1 {
  const { step_id: _drop, ...rest } = c;
  return rest;
}
