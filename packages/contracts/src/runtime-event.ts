import { z } from "zod";
import { CorrelationV2Schema } from "./correlation.js";

const EVENT_VALUES = [
  "trigger_fired",
  "post_analysis",
  "memory_saved",
  "rule_changed",
  "result_feedback",
  "prompt_assembled",
  "subagent_started",
  "subagent_completed",
  "subagent_failed",
  "tool_recovery_attempted",
  "tool_recovery_succeeded",
  "tool_recovery_failed",
  "turn_completed",
  "context_critical",
  "context_overflow_action",
  "session_started",
  "session_ended",
  "model_switched",
  "llm_call_started",
  "llm_call_ended",
  "llm_call_failed",
  "llm_call_retried",
  "tool_approval_requested",
  "approval_transition",
  "adapter_dispatch_attempt",
  "shutdown_started",
  "config_reloaded",
  "extension_invoked",
  "tool_result_offloaded",
  "mcp_server_connected",
  "mcp_server_failed",
  "user_input_received",
  "tool_exec_started",
  "tool_exec_ended",
  "tool_exec_failed",
  "tool_result_transform",
  "cost_warning",
  "cost_limit_exceeded",
  "execution_cancelled",
  "reasoning_metrics",
  "cognitive_perceive",
  "cognitive_plan",
  "cognitive_act",
  "cognitive_observe",
  "cognitive_reflect",
  "cognitive_update_memory",
  "self_improving_auto_trigger",
  "handoff_triggered",
  "turn_verify_passed",
  "turn_verify_failed",
  "mutation_proposed",
  "mutation_applied",
  "mutation_rejected",
  "mutation_reverted",
  "baseline_promoted",
  "program_md_unreadable",
  "memory_promotion_proposed",
] as const;

type EventValue = (typeof EVENT_VALUES)[number];
type UpperKeys = { readonly [V in EventValue as Uppercase<V>]: V };

/** The runtime event catalog: exactly 57 values; keys are the upper-case of the values. */
export const RuntimeEvent: UpperKeys = Object.freeze(
  Object.fromEntries(EVENT_VALUES.map((v) => [v.toUpperCase(), v])),
) as UpperKeys;
export type RuntimeEvent = EventValue;
export const RUNTIME_EVENTS: readonly RuntimeEvent[] = EVENT_VALUES;
export const RuntimeEventSchema = z.enum(EVENT_VALUES);

/**
 * Older integrations' names for the same catalog (the wire contract keeps them).
 * @alias
 */
export const HookEvent = RuntimeEvent;
export type HookEvent = RuntimeEvent;

export function isRuntimeEvent(value: unknown): value is RuntimeEvent {
  return typeof value === "string" && (EVENT_VALUES as readonly string[]).includes(value);
}

/** One runtime event on `{ns}.events.{value}`; `id` is also the `Nats-Msg-Id`. */
export const EventEnvelopeSchema = z.strictObject({
  id: z.string().min(1),
  event: RuntimeEventSchema,
  ts: z.number().int(),
  source: z.string(),
  correlation: CorrelationV2Schema,
  payload: z.record(z.string(), z.unknown()),
});
export type EventEnvelope = z.infer<typeof EventEnvelopeSchema>;

/** Retention buckets of the projection, in days. */
export const RETENTION_DAYS = { audit: 180, ops: 30, debug: 7 } as const;
export type RetentionBucket = keyof typeof RETENTION_DAYS;

const DEBUG_EVENTS: ReadonlySet<RuntimeEvent> = new Set<RuntimeEvent>([
  "reasoning_metrics",
  "cognitive_perceive",
  "cognitive_plan",
  "cognitive_act",
  "cognitive_observe",
  "cognitive_reflect",
  "cognitive_update_memory",
  "prompt_assembled",
  "adapter_dispatch_attempt",
  "llm_call_started",
  "tool_result_transform",
]);
const AUDIT_EVENTS: ReadonlySet<RuntimeEvent> = new Set<RuntimeEvent>([
  "extension_invoked",
  "tool_approval_requested",
  "approval_transition",
  "rule_changed",
  "config_reloaded",
  "mutation_proposed",
  "mutation_applied",
  "mutation_rejected",
  "mutation_reverted",
  "baseline_promoted",
  "cost_limit_exceeded",
]);

/** `extension_invoked` and other governance events are audit (180 d); chatty diagnostics are debug (7 d). */
export function retentionBucketOf(event: RuntimeEvent): RetentionBucket {
  if (AUDIT_EVENTS.has(event)) return "audit";
  if (DEBUG_EVENTS.has(event)) return "debug";
  return "ops";
}

/** Session timeline record kinds on `{ns}.timeline.{kind}`. */
export const TIMELINE_KINDS = [
  "session.started",
  "session.ended",
  "verification.decided",
  "verification.continued",
  "verification.pending",
  "verification.evidence",
  "tool.called",
  "tool.completed",
  "subagent.started",
  "subagent.stopped",
  "governance.gap",
  "mcp.read",
] as const;
export type TimelineKind = (typeof TIMELINE_KINDS)[number];
const TimelineKindSchema = z.enum(TIMELINE_KINDS);

export const TimelineRecordSchema = z.strictObject({
  id: z.string().min(1),
  kind: TimelineKindSchema,
  ts: z.number().int(),
  source: z.string(),
  correlation: CorrelationV2Schema,
  payload: z.record(z.string(), z.unknown()),
  payload_sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type TimelineRecord = z.infer<typeof TimelineRecordSchema>;

/** The `extension_invoked` payload: bounded fields only, never payload content. */
const EXTENSION_SURFACES = [
  "hook",
  "tool_request",
  "tool_execution",
  "llm_request",
  "llm_execution",
] as const;
export const ExtensionInvokedPayloadSchema = z.object({
  surface: z.enum(EXTENSION_SURFACES),
  name: z.string(),
  extension: z.string(),
  status: z.enum(["ok", "block", "deny", "error", "called_next", "short_circuit"]),
  reason: z.string(),
  duration_ms: z.number(),
  request_sha256_before: z.string().optional(),
  request_sha256_after: z.string().optional(),
});
export type ExtensionInvokedPayload = z.infer<typeof ExtensionInvokedPayloadSchema>;
