import { z } from "zod";
import { RequestCorrelationSchema } from "./correlation.js";
import { HookNameSchema, SchemaVersionSchema } from "./hook-name.js";
import { EvidenceRefSchema, FreeObjectSchema } from "./hook-payloads.js";
import { AGENT_NAME_PATTERN, HANDLER_NAME_PATTERN, TOOL_NAME_PATTERN } from "./names.js";
import { sha256 } from "./sanitize.js";

// ---- handler registration (KV {ns}_hook_handlers, key {HookName}.{handler}) ----

export const FailureModeSchema = z.enum(["open", "closed"]);
export type FailureMode = z.infer<typeof FailureModeSchema>;
export const HandlerNameSchema = z
  .string()
  .regex(HANDLER_NAME_PATTERN, "handler names match [A-Za-z0-9_-]{1,64}");
/** Tool-name globs, e.g. `{"tool_name": ["fs.*", "shell"]}`. */
export const HandlerMatchSchema = z.strictObject({ tool_name: z.array(z.string().min(1)).min(1).max(64) });
export type HandlerMatch = z.infer<typeof HandlerMatchSchema>;

export const HandlerRegistrationSchema = z.strictObject({
  hook: HookNameSchema,
  name: HandlerNameSchema,
  priority: z.number().int(),
  timeout_ms: z.number().int().min(0),
  schema_version: SchemaVersionSchema,
  failure_mode: FailureModeSchema,
  match: HandlerMatchSchema.nullable().optional(),
  heartbeat_at: z.number().int(),
  lease_ms: z.number().int().positive(),
});
export type HandlerRegistration = z.infer<typeof HandlerRegistrationSchema>;

// ---- tools ----

const ToolEffectSchema = z.enum(["read", "mutation", "communication", "admin"]);
export type ToolEffect = z.infer<typeof ToolEffectSchema>;
const ToolNameSchema = z.string().regex(TOOL_NAME_PATTERN, "tool names match [A-Za-z0-9_.-]{1,64}");

/** A tool definition (built-in, or remote in KV `{ns}_tools`). */
export const ToolDefinitionSchema = z.strictObject({
  name: ToolNameSchema,
  description: z.string(),
  input_schema: FreeObjectSchema,
  effect: ToolEffectSchema,
  requires_approval: z.boolean(),
  timeout_ms: z.number().int().min(0).optional(),
});
export type ToolDefinition = z.infer<typeof ToolDefinitionSchema>;

export const ToolExecuteRequestSchema = z.strictObject({
  tool_name: z.string().min(1),
  arguments: FreeObjectSchema,
  correlation: RequestCorrelationSchema,
  operation_key: z.string().min(1).max(256).optional(),
  timeout_ms: z.number().int().positive().optional(),
});

/**
 * The logical operation of a tool call, whose receipt an effectful tool needs: its
 * `operation_key`, else `{session_id}.{tool_call_id}`; null when it has neither.
 */
export function operationKeyOf(call: {
  operation_key?: string | undefined;
  correlation?: { session_id?: string; tool_call_id?: string } | undefined;
}): string | null {
  if (call.operation_key !== undefined) return call.operation_key;
  const { session_id, tool_call_id } = call.correlation ?? {};
  return session_id && tool_call_id ? `${session_id}.${tool_call_id}` : null;
}

const ReceiptStateSchema = z.enum(["admitted", "completed", "failed"]);
export type ReceiptState = z.infer<typeof ReceiptStateSchema>;
const ReceiptRefSchema = z.strictObject({
  key: z.string(),
  state: ReceiptStateSchema,
  revision: z.number().int(),
});
export type ReceiptRef = z.infer<typeof ReceiptRefSchema>;

const ToolCallStatusSchema = z.enum([
  "completed",
  "blocked",
  "denied",
  "replayed",
  "in_progress",
  "indeterminate",
  "failed",
]);
export type ToolCallStatus = z.infer<typeof ToolCallStatusSchema>;

export const ToolExecuteReplySchema = z.strictObject({
  status: ToolCallStatusSchema,
  result: FreeObjectSchema,
  has_error: z.boolean(),
  executed: z.boolean(),
  additional_context: z.array(z.string()),
  reason: z.string(),
  receipt: ReceiptRefSchema.nullable(),
});
export type ToolExecuteReply = z.infer<typeof ToolExecuteReplySchema>;

/** Stored receipt (KV `{ns}_tool_receipts`). */
export const ReceiptSchema = z.strictObject({
  key: z.string(),
  state: ReceiptStateSchema,
  tool_name: z.string(),
  arguments_sha256: z.string(),
  correlation: z.record(z.string(), z.unknown()),
  admitted_at: z.number().int(),
  /**
   * While `admitted`: the executor running the operation holds it until this time (epoch ms) and
   * renews it while it runs; a live lease means still running, a lapsed one means outcome unknown.
   * Null once the receipt is completed or failed; absent in receipts written before leases.
   */
  lease_until: z.number().int().nullable().optional(),
  completed_at: z.number().int().nullable(),
  result: FreeObjectSchema.nullable(),
  has_error: z.boolean().nullable(),
  status: z.string().nullable(),
  additional_context: z.array(z.string()).optional(),
  resolution: z
    .strictObject({ by: z.string(), reason: z.string(), at: z.number().int() })
    .nullable()
    .optional(),
});
export type Receipt = z.infer<typeof ReceiptSchema>;

/**
 * The reply for an operation key that already has a receipt (what a retry gets): `replayed` with
 * the stored result once it completed (or an operator resolved it); `in_progress` while the
 * executor running it holds its lease (nothing executed; retry later); `indeterminate` once the
 * lease lapsed (outcome unknown; never re-executed automatically). `note` prefixes the reason.
 */
export function receiptReply(
  receipt: Receipt,
  revision: number,
  options: { now?: number; note?: string } = {},
): ToolExecuteReply {
  const now = options.now ?? Date.now();
  const because = (text: string) => [options.note ?? "", text].filter((t) => t !== "").join("; ");
  const reply: ToolExecuteReply = {
    status: "replayed",
    result: {},
    has_error: false,
    executed: false,
    additional_context: [],
    reason: "",
    receipt: { key: receipt.key, state: receipt.state, revision },
  };
  if (isReceiptRunning(receipt, now)) {
    const until = new Date(receipt.lease_until ?? now).toISOString();
    const reason = because(`operation ${receipt.key} is still running (lease until ${until}); retry later`);
    return { ...reply, status: "in_progress", reason };
  }
  if (receipt.state === "admitted")
    return {
      ...reply,
      status: "indeterminate",
      has_error: true,
      reason: because(
        `operation ${receipt.key} was admitted but never completed; its outcome is unknown (resolve it with 'geode receipts resolve')`,
      ),
    };
  return {
    ...reply,
    result: receipt.result ?? {},
    has_error: receipt.has_error ?? receipt.state === "failed",
    additional_context: receipt.additional_context ?? [],
    reason: because(receipt.state === "failed" ? (receipt.resolution?.reason ?? "resolved as failed") : ""),
  };
}

/** Default length of a receipt lease (`GEODE_RECEIPT_LEASE_MS`). */
export const DEFAULT_RECEIPT_LEASE_MS = 10_000;

/**
 * An admitted receipt whose lease is live: its operation is still running (a second call gets
 * `in_progress`). An admitted receipt without a live lease has an unknown outcome (`indeterminate`).
 */
export function isReceiptRunning(receipt: Pick<Receipt, "state" | "lease_until">, now = Date.now()): boolean {
  return receipt.state === "admitted" && typeof receipt.lease_until === "number" && receipt.lease_until > now;
}

const KV_SAFE_KEY = /^[-/=\w]+(\.[-/=\w]+)*$/;

/**
 * The KV key of a receipt for an operation key: the key itself when NATS accepts it as a KV key,
 * else `sha256.<hex>` of it (the receipt keeps the original in `key`).
 */
export function receiptStorageKey(operationKey: string): string {
  return KV_SAFE_KEY.test(operationKey) && operationKey.length <= 256
    ? operationKey
    : `sha256.${sha256(operationKey)}`;
}

/** What a remote tool terminal receives on `{ns}.tool.terminal.{tool}` and replies. */
export const ToolTerminalRequestSchema = z.strictObject({
  tool_name: z.string(),
  arguments: FreeObjectSchema,
  correlation: z.record(z.string(), z.unknown()),
});
export const ToolTerminalReplySchema = z.object({ result: FreeObjectSchema, has_error: z.boolean() });

// ---- approvals ----

export const ApprovalRequestSchema = z.strictObject({
  approval_id: z.string().min(1),
  tool_name: z.string(),
  safety_level: z.string(),
  detail: z.string(),
  correlation: RequestCorrelationSchema,
});
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;
export const ApprovalReplySchema = z.strictObject({
  decision: z.enum(["allow", "deny"]),
  approver: z.string().min(1),
  reason: z.string().optional(),
});
export type ApprovalReply = z.infer<typeof ApprovalReplySchema>;

// ---- verification ----

const UsageSchema = z.strictObject({
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
const PolicyActionSchema = z.enum(POLICY_ACTIONS);
export type PolicyAction = z.infer<typeof PolicyActionSchema>;

const BuiltInResultSchema = z.strictObject({
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

// ---- verification state (KV {ns}_verify, key {session_id}.{turn_id}) ----

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

// ---- sessions and runs ----

const SessionStatusSchema = z.enum(["active", "paused", "completed", "error"]);
export type SessionStatus = z.infer<typeof SessionStatusSchema>;
export const AgentNameSchema = z
  .string()
  .regex(AGENT_NAME_PATTERN, "agent names match [a-z0-9][a-z0-9_-]{0,63}");
/** The kinds of coding agent the gateway governs (a runtime's own sessions name none). */
export const AgentKindSchema = z.enum(["claude-code", "codex", "gemini-cli", "copilot"]);
export type AgentKind = z.infer<typeof AgentKindSchema>;

export const SessionRecordSchema = z.strictObject({
  status: SessionStatusSchema,
  reason: z.string(),
  generation: z.number().int().min(0),
  model: z.string(),
  provider: z.string(),
  updated_at: z.number().int(),
  /** The gateway's agent (the name its token belongs to) whose session this is. */
  agent: AgentNameSchema.optional(),
  agent_kind: AgentKindSchema.optional(),
});
export type SessionRecord = z.infer<typeof SessionRecordSchema>;

export const RunRecordSchema = z.strictObject({
  run_id: z.string().min(1),
  status: z.enum(["active", "closed"]),
  opened_at: z.number().int(),
  closed_at: z.number().int().nullable(),
});
export type RunRecord = z.infer<typeof RunRecordSchema>;

// ---- agents (KV {ns}_agents, key = agent name) ----

/** An agent allowed to call the agent gateway: its bearer token is kept only as a SHA-256 hex digest. */
export const AgentRecordSchema = z.strictObject({
  name: AgentNameSchema,
  token_sha256: z.string().regex(/^[0-9a-f]{64}$/, "token_sha256 is a SHA-256 hex digest"),
  created_at: z.number().int(),
});
export type AgentRecord = z.infer<typeof AgentRecordSchema>;

// ---- health ----

export const HealthReplySchema = z.strictObject({
  service: z.string(),
  status: z.enum(["ok", "degraded"]),
  version: z.string(),
  started_at: z.number().int(),
  /** Why a degraded service is degraded, one line (absent when ok). */
  reason: z.string().optional(),
  /** Where the service serves Prometheus metrics (`http://127.0.0.1:{port}/metrics`); null when off. */
  metrics_url: z.string().nullable().optional(),
});
export type HealthReply = z.infer<typeof HealthReplySchema>;
