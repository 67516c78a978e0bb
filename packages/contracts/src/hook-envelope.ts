import { z } from "zod";
import {
  type Correlation,
  CorrelationInputSchema,
  CorrelationV1Schema,
  CorrelationV2Schema,
  isCompleteCorrelation,
  toCorrelationV1,
} from "./correlation.js";
import {
  ALLOWED_ACTIONS,
  HOOK_ACTIONS,
  type HookName,
  HookNameSchema,
  isHookName,
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
});
type HandlerReply = z.infer<typeof HandlerReplySchema>;

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
  correlation: CorrelationInputSchema.default(CorrelationInputSchema.parse({})),
  payload: z.record(z.string(), z.unknown()),
  timeout_ms: z.number().int().positive().optional(),
});
export type HookInvokeRequest = z.output<typeof HookInvokeRequestSchema>;

/*
 * The quick checks below take the bodies that the plane's own clients send, with every field
 * present and of its type, as they are, without a pass of the schema: in a running dispatcher or
 * handler that pass cost 50-70 µs per message, many times its cost in a tight loop. Each is
 * strictly narrower than its schema: what it returns, the schema accepts and returns equal (a
 * table of bodies in hook-envelope.test.ts checks it); anything else returns undefined and goes
 * to the schema, which decides and explains.
 */

/** An object as JSON makes it: not null, not an array, no prototype but Object's, no `__proto__` key. */
function isPlainRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && !Object.hasOwn(v, "__proto__");
}

function isCompleteCorrelationObject(v: unknown): v is Correlation {
  return isPlainRecord(v) && isCompleteCorrelation(v);
}

/** An invoke request with a complete correlation, taken as is; else undefined (see above). */
export function quickInvokeRequest(body: unknown): HookInvokeRequest | undefined {
  if (!isPlainRecord(body)) return undefined;
  const keys = Object.keys(body);
  const timeout = body["timeout_ms"];
  const withTimeout = keys.length === 3 && Number.isSafeInteger(timeout) && (timeout as number) > 0;
  if (!withTimeout && !(keys.length === 2 && !Object.hasOwn(body, "timeout_ms"))) return undefined;
  if (!isCompleteCorrelationObject(body["correlation"]) || !isPlainRecord(body["payload"])) return undefined;
  return body as HookInvokeRequest;
}

/** A handler envelope with a complete v2 correlation, taken as is; else undefined (see above). */
export function quickHookEnvelope(body: unknown): HookEnvelope | undefined {
  if (!isPlainRecord(body) || Object.keys(body).length !== 4) return undefined;
  const version = body["schema_version"];
  if (version !== SchemaVersion.V2 && version !== SchemaVersion.V1) return undefined;
  if (!isHookName(body["name"]) || !isPlainRecord(body["payload"])) return undefined;
  if (!isCompleteCorrelationObject(body["correlation"])) return undefined;
  return body as HookEnvelope;
}

/** A decision in the outcome, attributed to its handler. */
const AttributedDecisionSchema = HookDecisionSchema.extend({ handler: z.string() });
export type AttributedDecision = z.infer<typeof AttributedDecisionSchema>;

/** A handler's reply `{"decision": …}` with nothing else, taken as is; else undefined (see above). */
export function quickHandlerReply(body: unknown): HandlerReply | undefined {
  if (!isPlainRecord(body) || !Object.hasOwn(body, "decision") || Object.keys(body).length !== 1)
    return undefined;
  return body as HandlerReply;
}

const ACTIONS: ReadonlySet<string> = new Set(HOOK_ACTIONS);

/** Fields of an attributed decision that the quick check takes: the strings (the rest go to the schema). */
const QUICK_DECISION_FIELDS: ReadonlySet<string> = new Set(["action", "handler", "reason", "instruction"]);

function isQuickDecision(v: unknown): boolean {
  if (!isPlainRecord(v) || !ACTIONS.has(v["action"] as string) || typeof v["handler"] !== "string")
    return false;
  for (const key of Object.keys(v))
    if (!QUICK_DECISION_FIELDS.has(key) || typeof v[key] !== "string") return false;
  return true;
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

/**
 * The dispatcher's outcome, with a complete v2 correlation and decisions of string fields only,
 * taken as is; else undefined (see above).
 */
export function quickDispatchOutcome(body: unknown): DispatchOutcome | undefined {
  if (!isPlainRecord(body) || Object.keys(body).length !== 8) return undefined;
  const version = body["schema_version"];
  if (version !== SchemaVersion.V2 && version !== SchemaVersion.V1) return undefined;
  if (!isHookName(body["name"]) || !isPlainRecord(body["payload"]) || typeof body["blocked"] !== "boolean")
    return undefined;
  if (!isCompleteCorrelationObject(body["correlation"])) return undefined;
  if (!isStringArray(body["decision_sources"]) || !isStringArray(body["handler_errors"])) return undefined;
  const decisions = body["decisions"];
  if (!Array.isArray(decisions) || !decisions.every(isQuickDecision)) return undefined;
  return body as DispatchOutcome;
}

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
