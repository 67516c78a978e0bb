import { z } from "zod";
import type { HookName } from "./hook-name.js";

/** A free JSON object (`arguments`, `result`, `updates`). */
export const FreeObjectSchema = z.record(z.string(), z.unknown());
const int = z.number().int();
const redacted = { _redacted_fields: z.array(z.string()).optional() };

const EVIDENCE_KINDS = [
  "runtime_event",
  "sil_eval",
  "crucible_evidence",
  "native_receipt",
  "legacy",
] as const;
export const EvidenceRefSchema = z.strictObject({
  kind: z.enum(EVIDENCE_KINDS),
  schema_id: z.string().min(1),
  authority: z.string().min(1),
  reference: z.string().min(1),
});
export type EvidenceRef = z.infer<typeof EvidenceRefSchema>;
export const MAX_EVIDENCE_REFS = 32;

const verifyRequired = {
  passed: z.boolean(),
  mode: z.string(),
  score: z.number(),
  rubric_misses: z.array(z.string()),
  termination_reason: z.string(),
  rounds: int,
  tool_call_count: int,
  candidate_summary: z.string(),
};
const verifyOptional = {
  effective_mode: z.string().optional(),
  should_retry: z.boolean().optional(),
};

/** Each hook's payload: required fields, optional fields, `_redacted_fields`; nothing else. */
export const HookPayloadSchemas = {
  UserPromptSubmit: z.strictObject({ user_input: z.string(), ...redacted }),
  PreToolUse: z.strictObject({ tool_name: z.string(), arguments: FreeObjectSchema, ...redacted }),
  PermissionRequest: z.strictObject({
    tool_name: z.string(),
    safety_level: z.string(),
    detail: z.string(),
    ...redacted,
  }),
  PostToolUse: z.strictObject({
    tool_name: z.string(),
    arguments: FreeObjectSchema,
    result: FreeObjectSchema,
    has_error: z.boolean(),
    executed: z.boolean(),
    ...redacted,
  }),
  PreCompact: z.strictObject({
    model: z.string(),
    provider: z.string(),
    message_count: int,
    keep_recent: int,
    trigger: z.string(),
    hard: z.boolean(),
    ...redacted,
  }),
  PostCompact: z.strictObject({
    model: z.string(),
    provider: z.string(),
    original_message_count: int,
    new_message_count: int,
    keep_recent: int,
    trigger: z.string(),
    persisted: z.boolean(),
    ...redacted,
  }),
  SessionStart: z.strictObject({
    model: z.string(),
    provider: z.string(),
    resumed: z.boolean(),
    status: z.string(),
    ...redacted,
  }),
  SessionEnd: z.strictObject({ reason: z.string(), status: z.string(), ...redacted }),
  SubagentStart: z.strictObject({
    task_id: z.string(),
    task_type: z.string(),
    description: z.string(),
    child_session_key: z.string(),
    parent_session_key: z.string(),
    generation: int.optional(),
    ...redacted,
  }),
  SubagentStop: z.strictObject({
    task_id: z.string(),
    task_type: z.string(),
    success: z.boolean(),
    status: z.string(),
    duration_ms: z.number(),
    error: z.string(),
    child_session_key: z.string(),
    generation: int.optional(),
    ...redacted,
  }),
  PreVerify: z.strictObject({
    termination_reason: z.string(),
    rounds: int,
    tool_call_count: int,
    candidate_summary: z.string(),
    passed: z.boolean().optional(),
    mode: z.string().optional(),
    score: z.number().optional(),
    rubric_misses: z.array(z.string()).optional(),
    ...verifyOptional,
    ...redacted,
  }),
  PostVerify: z.strictObject({ ...verifyRequired, ...verifyOptional, ...redacted }),
  Stop: z.strictObject({
    ...verifyRequired,
    policy_action: z.string(),
    evidence_refs: z.array(EvidenceRefSchema).max(MAX_EVIDENCE_REFS),
    ...verifyOptional,
    ...redacted,
  }),
} as const satisfies Record<HookName, z.ZodType>;

/** Payload as a caller writes it (before sanitizing adds `_redacted_fields`). */
export type HookPayloadInput<H extends HookName> = z.input<(typeof HookPayloadSchemas)[H]>;
