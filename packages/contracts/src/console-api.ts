import { z } from "zod";
import { CorrelationV2Schema } from "./correlation.js";
import { FailureModeSchema, HandlerMatchSchema } from "./handler-registration.js";
import { HookNameSchema, SchemaVersionSchema } from "./hook-name.js";
import { RunRecordSchema } from "./run-record.js";

/*
 * The operator console's JSON API (`/api/…`, docs/console.md): every request and reply body. The
 * console's server checks action bodies with these schemas and types its replies with them; the
 * page reads the replies through their types. A field's message says what it must be; the server
 * puts the field's name before it (`approval_id must be a non-empty string of at most 128 characters`).
 */

/** What an operator's name may be: what approvals and resolutions record. */
export const OPERATOR_PATTERN = /^[A-Za-z0-9_.@-]{1,64}$/;

const nonEmpty = (max: number) => {
  const error = `must be a non-empty string of at most ${max} characters`;
  return z.string({ error }).min(1, { error }).max(max, { error });
};
const upTo = (max: number) => {
  const error = `must be a string of at most ${max} characters`;
  return z.string({ error }).max(max, { error });
};
/** Left out, null, or a string of at most `max` characters. */
const optionalText = (max: number) => upTo(max).nullish();
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.join(", ")}` });
/** An operator's name: the length first, then the pattern. */
const operatorName = (text: z.ZodString) =>
  text.regex(OPERATOR_PATTERN, { error: "must match [A-Za-z0-9_.@-]{1,64}" });

/** Refuses fields a body does not know (a typo must not silently do something else). */
const onlyTheseFields = {
  error: (issue: z.core.$ZodRawIssue) =>
    issue.code === "unrecognized_keys" ? `unknown field(s): ${issue.keys.slice(0, 8).join(", ")}` : undefined,
};

/** An action body: its fields and `operator`, who acts (scripts; a signed-in page acts as its own). */
const actionBody = <S extends z.core.$ZodLooseShape>(shape: S) =>
  z.strictObject({ ...shape, operator: operatorName(upTo(64)).nullish() }, onlyTheseFields);

// ---- requests ----

/** `POST /api/login`: the console token and the operator's name; the reply sets the session cookie. */
export const ConsoleLoginRequestSchema = z.strictObject(
  { token: nonEmpty(4096), operator: operatorName(nonEmpty(64)) },
  onlyTheseFields,
);
export type ConsoleLoginRequest = z.input<typeof ConsoleLoginRequestSchema>;

/** `POST /api/approvals/answer`: the reply to a waiting tool call. */
export const ConsoleApprovalAnswerSchema = actionBody({
  approval_id: nonEmpty(128),
  decision: oneOf(["allow", "deny"]),
  reason: optionalText(1024),
});
export type ConsoleApprovalAnswer = z.input<typeof ConsoleApprovalAnswerSchema>;

/** `POST /api/sessions/resolve`: deliver a parked candidate, or send the runtime back with an instruction. */
export const ConsoleSessionResolveSchema = actionBody({
  session_id: nonEmpty(256),
  turn_id: nonEmpty(256),
  action: oneOf(["deliver", "revise"]),
  instruction: optionalText(4096),
});
export type ConsoleSessionResolve = z.input<typeof ConsoleSessionResolveSchema>;

/** `POST /api/receipts/resolve`: an admitted receipt whose lease lapsed, as completed or failed. */
export const ConsoleReceiptResolveSchema = actionBody({
  key: nonEmpty(1024),
  as: oneOf(["completed", "failed"]),
  reason: optionalText(1024),
});
export type ConsoleReceiptResolve = z.input<typeof ConsoleReceiptResolveSchema>;

// ---- replies ----

const int = z.number().int();
const count = int.min(0);

/** The paging fields of every list: `next_offset` is null on the last page. */
const ConsolePageFieldsSchema = z.strictObject({
  total: count,
  offset: count,
  limit: count,
  next_offset: count.nullable(),
});
/** One page of a list: `{items, total, offset, limit, next_offset}`. */
export type ConsolePage<T> = z.infer<typeof ConsolePageFieldsSchema> & { items: T[] };
const pageOf = <T extends z.ZodType>(item: T) => ConsolePageFieldsSchema.extend({ items: z.array(item) });

/** `GET /api/approvals`: an approval request waiting for an operator. */
export const ConsoleApprovalSchema = z.strictObject({
  approval_id: z.string(),
  tool_name: z.string(),
  safety_level: z.string(),
  detail: z.string(),
  correlation: CorrelationV2Schema,
  received_at: int,
  /** When the tool-executor stops waiting (`GEODE_APPROVAL_TIMEOUT_MS` after the request). */
  expires_at: int,
  /** The gateway agent whose session asks (KV `{ns}_sessions`); null for a runtime's session. */
  agent: z.string().nullable(),
  agent_kind: z.string().nullable(),
  /**
   * The policies that sent the call to a person (`set.id`, from the call's audited policy reason
   * in the projection); [] while the console cannot tell (no projection, not recorded yet, or a
   * handler that is no policy asked).
   */
  policies: z.array(z.string()),
  /** Their `@reason`, as the agent was told; null with no policies. */
  policy_reason: z.string().nullable(),
});
export type ConsoleApproval = z.infer<typeof ConsoleApprovalSchema>;
export const ConsoleApprovalsPageSchema = pageOf(ConsoleApprovalSchema);

/** `POST /api/approvals/answer`'s reply. */
export const ConsoleApprovalAnsweredSchema = z.strictObject({
  approval_id: z.string(),
  decision: z.enum(["allow", "deny"]),
  approver: z.string(),
});
export type ConsoleApprovalAnswered = z.infer<typeof ConsoleApprovalAnsweredSchema>;

/** `GET /api/runs`: run projections (KV `{ns}_runs`), the most recent first. */
export const ConsoleRunsPageSchema = pageOf(RunRecordSchema);

/** `GET /api/sessions?status=paused`: a root turn parked for its external owner. */
export const ConsoleParkedTurnSchema = z.strictObject({
  session_id: z.string(),
  turn_id: z.string(),
  policy_action: z.string(),
  verify_attempt: count,
  pending_text: z.string(),
  candidate_sha256: z.string(),
  updated_at: int,
});
export type ConsoleParkedTurn = z.infer<typeof ConsoleParkedTurnSchema>;
export const ConsoleParkedTurnsPageSchema = pageOf(ConsoleParkedTurnSchema);

/** `POST /api/sessions/resolve`'s reply. */
export const ConsoleSessionResolvedSchema = z.strictObject({
  session_id: z.string(),
  turn_id: z.string(),
  action: z.enum(["deliver", "revise"]),
  operator: z.string(),
  policy_action: z.string(),
  deliver: z.boolean(),
});
export type ConsoleSessionResolved = z.infer<typeof ConsoleSessionResolvedSchema>;

/** `GET /api/receipts`: a tool admission receipt; `running` while its lease is live. */
export const ConsoleReceiptSchema = z.strictObject({
  key: z.string(),
  state: z.enum(["admitted", "completed", "failed"]),
  tool_name: z.string(),
  running: z.boolean(),
  lease_until: int.nullable(),
  admitted_at: int,
  completed_at: int.nullable(),
  status: z.string().nullable(),
  correlation: z.record(z.string(), z.unknown()),
  resolution: z.strictObject({ by: z.string(), reason: z.string(), at: int }).nullable(),
});
export type ConsoleReceipt = z.infer<typeof ConsoleReceiptSchema>;
export const ConsoleReceiptsPageSchema = pageOf(ConsoleReceiptSchema);

/** `POST /api/receipts/resolve`'s reply. */
export const ConsoleReceiptResolvedSchema = z.strictObject({
  key: z.string(),
  state: z.enum(["completed", "failed"]),
  revision: int,
  by: z.string(),
});
export type ConsoleReceiptResolved = z.infer<typeof ConsoleReceiptResolvedSchema>;

/** One entry of a run's timeline: a runtime event or a session timeline record (the SSE `item`). */
export const ConsoleTimelineItemSchema = z.strictObject({
  stream: z.enum(["events", "timeline"]),
  seq: count,
  id: z.string(),
  /** The event value or the timeline kind. */
  name: z.string(),
  ts: int,
  source: z.string(),
  correlation: CorrelationV2Schema,
  payload: z.record(z.string(), z.unknown()),
});
export type ConsoleTimelineItem = z.infer<typeof ConsoleTimelineItemSchema>;

/** `GET /api/runs/{run_id}/timeline`: a page of the run's timeline and the cursor `E.T` to go on from. */
export const ConsoleTimelinePageSchema = z.strictObject({
  run_id: z.string(),
  items: z.array(ConsoleTimelineItemSchema),
  next: z.string(),
  more: z.boolean(),
});
export type ConsoleTimelinePage = z.infer<typeof ConsoleTimelinePageSchema>;

/** `GET /api/handlers`: a hook handler registration with its heartbeat age and recent error rate. */
export const ConsoleHandlerSchema = z.strictObject({
  hook: HookNameSchema,
  name: z.string(),
  priority: int,
  failure_mode: FailureModeSchema,
  timeout_ms: count,
  schema_version: SchemaVersionSchema,
  match: HandlerMatchSchema.nullable(),
  heartbeat_at: int,
  heartbeat_age_ms: count,
  lease_ms: int,
  lease_expired: z.boolean(),
  recent_calls: count,
  recent_errors: count,
  /** errors / calls over the window, null without calls. */
  error_rate: z.number().nullable(),
  /** A webhook handler's endpoint host (KV `{ns}_webhooks`; never its secret); null for a NATS handler. */
  webhook_host: z.string().nullable(),
});
export type ConsoleHandler = z.infer<typeof ConsoleHandlerSchema>;
export const ConsoleHandlersPageSchema = pageOf(ConsoleHandlerSchema);

/** The activity-recorder's position on one stream. */
export const ConsoleRecorderLagSchema = z.strictObject({
  stream: z.string(),
  consumer: z.string(),
  /** False when the recorder never started on this stream (no durable consumer yet). */
  present: z.boolean(),
  /** Messages not yet applied (`recorderLagMessages`, as the metric `geode_recorder_lag_messages`). */
  lag: count.nullable(),
  pending: count.nullable(),
  ack_pending: count.nullable(),
  stream_last_seq: count.nullable(),
  /** The last stream sequence delivered to the recorder. */
  delivered_seq: count.nullable(),
});
export type ConsoleRecorderLag = z.infer<typeof ConsoleRecorderLagSchema>;
/** `GET /api/recorder`. */
export const ConsoleRecorderSchema = z.strictObject({ streams: z.array(ConsoleRecorderLagSchema) });
export type ConsoleRecorder = z.infer<typeof ConsoleRecorderSchema>;

/** `GET /api/me`: who the caller is (a page's operator; null for the bearer token). */
export const ConsoleMeSchema = z.strictObject({
  operator: z.string().nullable(),
  via: z.enum(["bearer", "cookie"]),
});
export type ConsoleMe = z.infer<typeof ConsoleMeSchema>;

/** `POST /api/login`'s reply (with the session cookie). */
export const ConsoleLoginReplySchema = z.strictObject({ operator: z.string() });
export type ConsoleLoginReply = z.infer<typeof ConsoleLoginReplySchema>;
/** `POST /api/logout`'s reply. */
export const ConsoleLogoutReplySchema = z.strictObject({ signed_out: z.literal(true) });
export type ConsoleLogoutReply = z.infer<typeof ConsoleLogoutReplySchema>;
