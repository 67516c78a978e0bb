import { z } from "zod";
import { EvidenceRefSchema } from "./hook-payloads.js";
import { BuiltInResultSchema, PolicyActionSchema, UsageSchema } from "./verify-request.js";

/* A root turn's verification state: KV `{ns}_verify`, key `{session_id}.{turn_id}`. */

const VerifyAttemptSchema = z.strictObject({
  attempt: z.number().int().min(0),
  /** `running` while the finalize is in progress; `aborted` when it failed before deciding. */
  state: z.enum(["running", "decided", "aborted"]),
  rounds: z.number().int().min(0),
  tool_call_count: z.number().int().min(0),
  usage: UsageSchema,
  candidate_sha256: z.string(),
  policy_action: PolicyActionSchema.nullable(),
  built_in: BuiltInResultSchema.nullable(),
  started_at: z.number().int(),
  decided_at: z.number().int().nullable(),
});

const VerifyTotalsSchema = z.strictObject({
  rounds: z.number().int(),
  tool_call_count: z.number().int(),
  usage: UsageSchema,
});
export type VerifyTotals = z.infer<typeof VerifyTotalsSchema>;

/**
 * A root turn's verification state. The parked candidate text lives here (and only here) until its
 * owner resolves it; `final` is the checkpoint of the turn's final result.
 */
export const TurnRecordSchema = z.strictObject({
  session_id: z.string(),
  turn_id: z.string(),
  status: z.enum(["open", "parked", "delivered"]),
  attempts: z.array(VerifyAttemptSchema),
  pending: z
    .strictObject({
      attempt: z.number().int(),
      text: z.string(),
      candidate_sha256: z.string(),
      policy_action: PolicyActionSchema,
    })
    .nullable(),
  final: z
    .strictObject({
      attempt: z.number().int(),
      policy_action: PolicyActionSchema,
      candidate_sha256: z.string(),
      totals: VerifyTotalsSchema,
      evidence_refs: z.array(EvidenceRefSchema),
      decided_at: z.number().int(),
      resolved_by: z.enum(["verifier", "owner"]),
    })
    .nullable(),
  updated_at: z.number().int(),
});
export type TurnRecord = z.infer<typeof TurnRecordSchema>;
