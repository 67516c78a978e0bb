import { z } from "zod";
import {
  type Correlation,
  CorrelationV1Schema,
  CorrelationV2Schema,
  RequestCorrelationSchema,
  toCorrelationV1,
} from "./correlation.js";
import {
  ALLOWED_ACTIONS,
  HOOK_ACTIONS,
  type HookName,
  HookNameSchema,
  SchemaVersion,
  type SchemaVersionLabel,
  SchemaVersionSchema,
} from "./hook-name.js";
import { EvidenceRefSchema, FreeObjectSchema } from "./hook-payloads.js";

/** The decision fields a handler may return (the action is checked per hook). */
export const DECISION_FIELDS = [
  "action",
  "reason",
  "updates",
  "instruction",
  "additional_misses",
  "evidence_refs",
] as const;

/** Decision schema for one hook (action enum = that hook's allowed actions). */
export function decisionSchemaFor(hook: HookName) {
  const actions = ALLOWED_ACTIONS[hook] as readonly string[] as [string, ...string[]];
  return z.strictObject({
    action: z.enum(actions),
    reason: z.string().optional(),
    updates: FreeObjectSchema.optional(),
    instruction: z.string().optional(),
    additional_misses: z.array(z.string()).optional(),
    evidence_refs: z.array(EvidenceRefSchema).optional(),
  });
}

/** Any hook's decision, action from the whole action set. */
const HookDecisionSchema = z.strictObject({
  action: z.enum(HOOK_ACTIONS),
  reason: z.string().optional(),
  updates: FreeObjectSchema.optional(),
  instruction: z.string().optional(),
  additional_misses: z.array(z.string()).optional(),
  evidence_refs: z.array(EvidenceRefSchema).optional(),
});
export type HookDecision = z.infer<typeof HookDecisionSchema>;

/** What a handler replies: `{"decision": null}` or `{"decision": {...}}`. */
export const HandlerReplySchema = z.object({
  decision: z.unknown().describe("the decision (see hooks.md for what each hook allows), or null for none"),
  audit_reason: z
    .string()
    .optional()
    .describe(
      "with no decision, or one that does not stop the chain (not block or deny, which are audited with their own reason): a short note the audit records as the call's reason (cut to 512, redacted), e.g. the deciding policies of a policy-guard's ask, or what it would have done in audit mode",
    ),
});

/** What a handler receives. */
export const HookEnvelopeSchema = z.strictObject({
  schema_version: SchemaVersionSchema,
  name: HookNameSchema,
  correlation: z.union([CorrelationV2Schema, CorrelationV1Schema]),
  payload: z.record(z.string(), z.unknown()),
});
export type HookEnvelope = {
  schema_version: z.infer<typeof SchemaVersionSchema>;
  name: HookName;
  correlation: Correlation | z.infer<typeof CorrelationV1Schema>;
  payload: Record<string, unknown>;
};

/**
 * Builds the envelope a handler receives (the encoder of the handler leg). A v1 envelope carries the
 * v1 correlation (no `step_id`), as a handler registered for v1 expects. `version` is a label
 * (`v1`) or the full version string of a registration.
 */
export function hookEnvelope(
  name: HookName,
  correlation: Correlation,
  payload: Record<string, unknown>,
  version: SchemaVersionLabel | SchemaVersion = "v2",
): HookEnvelope {
  const v1 = version === "v1" || version === SchemaVersion.V1;
  return {
    schema_version: v1 ? SchemaVersion.V1 : SchemaVersion.V2,
    name,
    correlation: v1 ? toCorrelationV1(correlation) : { ...correlation },
    payload,
  };
}

/** `{hook}.invoke` request body. */
export const HookInvokeRequestSchema = z.strictObject({
  correlation: RequestCorrelationSchema,
  payload: z.record(z.string(), z.unknown()),
  timeout_ms: z.number().int().positive().optional(),
  guarded: z
    .strictObject({
      arguments: z.record(z.string(), z.unknown()),
      oversize: z.array(z.string()),
    })
    .optional()
    .describe(
      "PermissionRequest only, whose payload names the call in a bounded `detail`: the guarded facts of the call's whole input as `guardedArguments` takes them (its command, path and URL fields, and those that were over the bounds), which the dispatcher hands its handlers in the Geode-Guarded-Arguments header; for PreToolUse and PostToolUse it takes them from the payload's own arguments",
    ),
});
export type HookInvokeRequest = z.infer<typeof HookInvokeRequestSchema>;

/** A decision in the outcome, attributed to its handler. */
const AttributedDecisionSchema = HookDecisionSchema.extend({ handler: z.string() });
export type AttributedDecision = z.infer<typeof AttributedDecisionSchema>;

/** The reply to an invocation: the composed outcome of the handler chain. */
export const DispatchOutcomeSchema = z.strictObject({
  schema_version: SchemaVersionSchema,
  name: HookNameSchema,
  correlation: CorrelationV2Schema,
  payload: z.record(z.string(), z.unknown()),
  decisions: z.array(AttributedDecisionSchema),
  decision_sources: z.array(z.string()),
  handler_errors: z.array(z.string()),
  blocked: z.boolean(),
});
export type DispatchOutcome = z.infer<typeof DispatchOutcomeSchema>;

/** `<handler>: <reason>` of the outcome's first decision with one of `actions`, else `<fallback> by <handler>`. */
export function decisionReason(
  outcome: DispatchOutcome,
  actions: readonly string[],
  fallback: string,
): string {
  const d = outcome.decisions.find((x) => actions.includes(x.action));
  if (!d) return fallback;
  return d.reason ? `${d.handler}: ${d.reason}` : `${fallback} by ${d.handler}`;
}

/**
 * True when an outcome stops the call: a decision with `action` (`block`, or `deny` for
 * PermissionRequest), or a closed guard that failed (`blocked`).
 */
export function isBlocked(outcome: DispatchOutcome, action: "block" | "deny" = "block"): boolean {
  return outcome.blocked || outcome.decisions.some((d) => d.action === action);
}
