import { z } from "zod";
import { RequestCorrelationSchema } from "./correlation.js";
import { EvidenceRefSchema } from "./hook-payloads.js";

/* The verifier's legs: `{ns}.verify.finalize` and `{ns}.verify.resolve`, and their one reply. */

export const UsageSchema = z.strictObject({
  input_tokens: z.number().int().min(0),
  output_tokens: z.number().int().min(0),
});
export type Usage = z.infer<typeof UsageSchema>;
const RubricSchema = z.strictObject({
  required: z.array(z.string()).max(64).default([]),
  forbidden: z.array(z.string()).max(64).default([]),
});
const VerifyModeSchema = z.enum(["rule_based", "off"]);
export type VerifyMode = z.infer<typeof VerifyModeSchema>;

export const VerifyFinalizeRequestSchema = z.strictObject({
  correlation: RequestCorrelationSchema,
  candidate: z.strictObject({
    text: z.string(),
    termination_reason: z.string(),
    rounds: z.number().int().min(0),
    tool_call_count: z.number().int().min(0),
    usage: UsageSchema.optional(),
  }),
  mode: VerifyModeSchema.optional(),
  rubric: RubricSchema.optional(),
});
export type VerifyFinalizeRequest = z.input<typeof VerifyFinalizeRequestSchema>;

export const VerifyResolveRequestSchema = z.strictObject({
  correlation: RequestCorrelationSchema,
  action: z.enum(["deliver", "revise"]),
  instruction: z.string().optional(),
});
export type VerifyResolveRequest = z.input<typeof VerifyResolveRequestSchema>;

const POLICY_ACTIONS = [
  "accept",
  "revise",
  "continue",
  "escalate",
  "escalate_budget_exhausted",
  "built_in_fail",
] as const;
export const PolicyActionSchema = z.enum(POLICY_ACTIONS);
export type PolicyAction = z.infer<typeof PolicyActionSchema>;

export const BuiltInResultSchema = z.strictObject({
  passed: z.boolean(),
  mode: z.string(),
  score: z.number(),
  rubric_misses: z.array(z.string()),
  should_retry: z.boolean(),
});
export type BuiltInResult = z.infer<typeof BuiltInResultSchema>;

export const VerifyReplySchema = z.strictObject({
  policy_action: PolicyActionSchema,
  deliver: z.boolean(),
  verify_attempt: z.number().int().min(0),
  built_in: BuiltInResultSchema,
  follow_up_instruction: z.string().optional(),
  pending_text: z.string().optional(),
  totals: z.strictObject({ rounds: z.number().int(), tool_call_count: z.number().int(), usage: UsageSchema }),
  candidate_sha256: z.string(),
  evidence_refs: z.array(EvidenceRefSchema),
});
export type VerifyReply = z.infer<typeof VerifyReplySchema>;
