/**
 * docs/protocol.md, the wire protocol reference, generated from `@geode/contracts` (names, the
 * request/reply legs and their codecs, error codes, record schemas, event catalog) and from the
 * bus's provisioning defaults, so the reference cannot drift from what is parsed and sent. The prose
 * between the tables is kept here with them. A test fails when the committed file is stale.
 *
 *   pnpm docs:protocol          # rewrite docs/protocol.md
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { BUCKET_HISTORY, type BucketName, RESULT_STORE_DEFAULTS, STREAM_DEFAULTS } from "@geode/bus";
import {
  AGENT_CHECK_EVENT,
  AGENT_NAME_PATTERN,
  AgentCheckReportSchema,
  AgentRecordSchema,
  AuditCheckpointSchema,
  AuditGapSchema,
  agentCheckPath,
  BudgetRecordSchema,
  BudgetSpendSchema,
  CLAUDE_CODE_EVENTS,
  CLAUDE_CODE_HOOK_PATH,
  DEFAULT_RESULT_INLINE_BYTES,
  ERROR_CODES,
  type ErrorCode,
  ErrorKind,
  EventEnvelopeSchema,
  ExtensionInvokedPayloadSchema,
  GUARDED_ARGUMENTS_HEADER,
  GUARDED_FACT_BYTES,
  GUARDED_PATHS_MAX,
  GUARDED_TOOL_HOOKS,
  HANDLER_NAME_PATTERN,
  HandlerRegistrationSchema,
  INVOCATION_ID_HEADER,
  INVOCATION_ID_PATTERN,
  LlmPriceRecordSchema,
  LlmProviderRecordSchema,
  McpServerRecordSchema,
  NAMESPACE_PATTERN,
  NotaryLeaseSchema,
  names,
  OPENCODE_EVENTS,
  OPENCODE_HOOK_PATH,
  OpencodeEventFields,
  OpencodeHookInputSchema,
  PolicyRecordSchema,
  PROBE_HEADER,
  RECORDER_CONSUMER,
  RETENTION_DAYS,
  ReceiptSchema,
  ResultRefSchema,
  RUN_ID_PATTERN,
  RUNTIME_EVENTS,
  RunRecordSchema,
  resultChunkPrefix,
  resultMetaSubject,
  retentionBucketOf,
  SessionRecordSchema,
  TIMELINE_KINDS,
  TimelineRecordSchema,
  TOOL_NAME_PATTERN,
  ToolDefinitionSchema,
  ToolResultOffloadedSchema,
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
  TurnRecordSchema,
  VERIFIER_CONSUMERS,
  WebhookRecordSchema,
  WIRE_LEGS,
  type WireLeg,
} from "@geode/contracts";
import { REPO_ROOT } from "@geode/testing";
import { z } from "zod";

export const PROTOCOL_DOC = path.join(REPO_ROOT, "docs/protocol.md");

// ---- JSON Schema → field tables -------------------------------------------------------------

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
  description?: string;
  additionalProperties?: boolean | JsonSchema;
};

const code = (s: string): string => `\`${s.replaceAll("|", "\\|")}\``;
const cell = (s: string): string => s.replaceAll("|", "\\|").replaceAll("\n", " ");

/** The JSON Schema of what a sender may write (`input`) or what a receiver gets (`output`). */
function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  return z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema;
}

function isNull(s: JsonSchema): boolean {
  return s.type === "null";
}

function typeOf(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => code(JSON.stringify(v))).join(", ");
  if (s.const !== undefined) return code(JSON.stringify(s.const));
  if (s.anyOf) {
    const parts = s.anyOf.filter((v) => !isNull(v)).map(typeOf);
    const unique = [...new Set(parts)];
    return unique.join(" or ") + (s.anyOf.some(isNull) ? " or null" : "");
  }
  if (s.type === "array") return s.items ? `array of ${typeOf(s.items)}` : "array";
  if (s.type === "object" && !s.properties) return "object (any JSON values)";
  if (s.type === undefined) return "any JSON value";
  return Array.isArray(s.type) ? s.type.join(" or ") : s.type;
}

const SAFE = Number.MAX_SAFE_INTEGER;

function constraints(s: JsonSchema): string[] {
  const out: string[] = [];
  if (s.pattern) out.push(`matches ${code(s.pattern)}`);
  if (s.minLength === 1) out.push("non-empty");
  else if (s.minLength !== undefined && s.minLength > 1) out.push(`at least ${s.minLength} characters`);
  if (s.maxLength !== undefined) out.push(`at most ${s.maxLength} characters`);
  if (s.exclusiveMinimum !== undefined) out.push(`> ${s.exclusiveMinimum}`);
  if (s.minimum !== undefined && s.minimum > -SAFE) out.push(`≥ ${s.minimum}`);
  if (s.maximum !== undefined && s.maximum < SAFE) out.push(`≤ ${s.maximum}`);
  if (s.minItems === 1) out.push("non-empty");
  else if (s.minItems !== undefined && s.minItems > 1) out.push(`at least ${s.minItems} items`);
  if (s.maxItems !== undefined) out.push(`at most ${s.maxItems} items`);
  if (s.description) out.push(s.description);
  return out;
}

/** The object variant to expand under a field (nullable objects and arrays of objects included). */
function expandable(s: JsonSchema): { schema: JsonSchema; suffix: string } | null {
  if (s.type === "object" && s.properties && Object.keys(s.properties).length > 0)
    return { schema: s, suffix: "" };
  if (s.type === "array" && s.items) {
    const inner = expandable(s.items);
    return inner ? { schema: inner.schema, suffix: `[]${inner.suffix}` } : null;
  }
  if (s.anyOf) {
    const objects = s.anyOf.filter((v) => !isNull(v)).map(expandable);
    // Several object shapes (an older correlation, say): the first is the current one.
    return objects[0] ?? null;
  }
  return null;
}

function fieldRows(s: JsonSchema, prefix: string, depth: number): string[] {
  const rows: string[] = [];
  const required = new Set(s.required ?? []);
  for (const [name, field] of Object.entries(s.properties ?? {})) {
    const fieldPath = `${prefix}${name}`;
    const presence =
      field.default !== undefined
        ? `no (default ${code(JSON.stringify(field.default).slice(0, 40))}${JSON.stringify(field.default).length > 40 ? "…" : ""})`
        : required.has(name)
          ? "yes"
          : "no";
    let type = typeOf(field);
    const inner = expandable(field);
    if (inner && field.anyOf && field.anyOf.filter((v) => !isNull(v)).length > 1) {
      type = `object (current shape below; older senders: a v1 shape)${field.anyOf.some(isNull) ? " or null" : ""}`;
    } else if (inner && type.startsWith("object")) {
      type = `object${field.anyOf?.some(isNull) ? " or null" : ""}`;
    }
    rows.push(
      `| ${code(fieldPath)} | ${cell(type)} | ${presence} | ${cell(constraints(field).join("; "))} |`,
    );
    if (inner && depth < 3) rows.push(...fieldRows(inner.schema, `${fieldPath}${inner.suffix}.`, depth + 1));
  }
  return rows;
}

/** A markdown table of every field of a message, nested objects as dotted paths. */
export function fieldTable(schema: z.ZodType, io: "input" | "output"): string {
  const json = jsonSchemaOf(schema, io);
  const rows = fieldRows(json, "", 0);
  if (rows.length === 0) return "An empty object `{}` (or an empty body).";
  const extra =
    json.additionalProperties === false ? "No other field is accepted." : "Other fields are passed through.";
  return ["| field | type | required | notes |", "| --- | --- | --- | --- |", ...rows, "", extra].join("\n");
}

// ---- sections --------------------------------------------------------------------------------

/** The names of a sentinel namespace `ns`, written back with `{ns}` / `{NS}` placeholders. */
const n = names("ns");
const ph = (name: string): string => name.replace(/^ns(?=[._])/, "{ns}").replace(/^NS_/, "{NS}_");

function namesSection(): string {
  const rows: Array<[string, string, string]> = [
    ["invoke a hook", ph(n.hookInvoke("{HookName}")), "request/reply (see the legs below)"],
    [
      "cancel an invocation",
      ph(n.hookCancel("{invocation_id}")),
      "an empty message, published by a caller that gives up",
    ],
    ["deliver to a handler", ph(n.hookHandler("{HookName}" as never, "{handler}")), "request/reply"],
    ["execute a tool", ph(n.toolExecute), "request/reply"],
    ["remote tool terminal", ph(n.toolTerminal("{tool}")), "request/reply"],
    ["human approval", ph(n.approvalRequest), "request/reply, first reply wins"],
    ["verification", `${ph(n.verifyFinalize)}, ${ph(n.verifyResolve)}`, "request/reply"],
    ["health", ph(n.health("{service}")), "request/reply"],
    ["runtime events", ph(n.event("{event}" as never)), `stream ${code(ph(n.eventsStream))}`],
    ["session timeline", ph(n.timeline("{kind}" as never)), `stream ${code(ph(n.timelineStream))}`],
    [
      "audit checkpoints",
      ph(n.auditCheckpoint("{log}" as never)),
      `stream ${code(ph(n.checkpointsStream))}; \`{log}\` is \`events\` or \`timeline\`, see [Audit](#audit-checkpoints-and-gaps)`,
    ],
    ["audit gaps", ph(n.auditGap("{log}" as never)), "published by the notary (no stream)"],
    ["KV buckets", Object.values(n.buckets).map(ph).join(", "), "see [KV buckets](#kv-buckets)"],
    ["Object Store", ph(n.resultStore), "large tool results, see [Large results](#large-results)"],
    ["Postgres schema", ph(n.pgSchema), "see [Projection](#projection)"],
  ];
  const patterns: Array<[string, RegExp | string]> = [
    ["namespace `ns`", NAMESPACE_PATTERN],
    ["handler name", HANDLER_NAME_PATTERN],
    ["tool name", TOOL_NAME_PATTERN],
    ["run id (no leading or trailing dot)", RUN_ID_PATTERN],
    ["agent name", AGENT_NAME_PATTERN],
    ["invocation id", INVOCATION_ID_PATTERN],
  ];
  return [
    "## Names",
    "",
    "One namespace `ns` (`GEODE_NAMESPACE`, default `geode`) prefixes every name, so deployments and",
    "test runs share one NATS and one Postgres without touching each other; `NS` is `ns` upper-cased.",
    "",
    "| what | name | how |",
    "| --- | --- | --- |",
    ...rows.map(([what, name, how]) => `| ${what} | ${name.split(", ").map(code).join(", ")} | ${how} |`),
    "",
    "| identifier | pattern |",
    "| --- | --- |",
    ...patterns.map(([what, re]) => `| ${what} | ${code(String(re instanceof RegExp ? re.source : re))} |`),
  ].join("\n");
}

/** Headings of the legs, by subject (a new leg needs one here). */
const LEG_TITLES: Record<string, string> = {
  "{ns}.hook.invoke.{HookName}": "Invoke a hook",
  "{ns}.hook.handler.{HookName}.{handler}": "Deliver to a handler",
  "{ns}.tool.execute": "Execute a tool",
  "{ns}.tool.terminal.{tool}": "Remote tool terminal",
  "{ns}.approval.request": "Human approval",
  "{ns}.verify.finalize": "Verify a candidate",
  "{ns}.verify.resolve": "Resolve a parked candidate",
  "{ns}.health.{service}": "Health",
};

export function legTitle(leg: WireLeg<unknown, unknown, unknown, unknown>): string {
  const title = LEG_TITLES[leg.subject];
  if (!title) throw new Error(`scripts/protocol-docs.ts has no title for the leg ${leg.subject}`);
  return title;
}

function legsSection(): string {
  const out = [
    "## Request/reply legs",
    "",
    "Every request and reply body is UTF-8 JSON, nested at most 128 levels deep. Each leg has one codec",
    "per direction in `@geode/contracts` (`packages/contracts/src/wire-legs.ts`); senders and",
    "responders use them, and the tables below are generated from them. A request that fails gets",
    "the [error reply](#errors) instead. Timestamps are epoch milliseconds.",
  ];
  for (const leg of WIRE_LEGS) {
    out.push(
      "",
      `### ${legTitle(leg)}`,
      "",
      `Subject ${code(leg.subject)}, queue group ${leg.queue.startsWith("(") ? leg.queue : code(leg.queue)}: ${leg.summary}.`,
      "",
      "Request:",
      "",
      fieldTable(leg.request.schema, "input"),
      "",
      "Reply:",
      "",
      fieldTable(leg.reply.schema, "output"),
    );
  }
  return out.join("\n");
}

/** What each error code means; typed so a new code cannot go undocumented. */
const ERROR_MEANINGS: Record<ErrorCode, string> = {
  invalid_request: "the body is not JSON, nests too deep, or has the wrong shape for its leg",
  unknown_hook: "the subject names no public hook",
  invalid_payload: "a hook payload misses a required field, has one of the wrong type or an unknown one",
  duplicate_handler: "a handler name is already registered for that hook by a live registration",
  unknown_tool: "no built-in or remote tool has that name",
  policy_denied: "the operator's tool policy denies the call",
  schema_invalid: "tool arguments do not match the tool's input schema",
  indeterminate:
    "the outcome of an effectful call is unknown (lapsed receipt lease, terminal timeout); a tool terminal replies it when it passed the call on and lost it (the executor then keeps the receipt `admitted`, as for a timeout)",
  session_paused: "the session awaits external verification",
  budget_exhausted: "the revision budget of the root turn is spent",
  unavailable: "a dependency (NATS, a responder, storage) cannot be reached; retry later",
  timeout: "the caller's time budget ran out",
  internal: "a bug or an unexpected failure; the message says what",
};

const KIND_MEANINGS: Record<ErrorKind, string> = {
  invalid_decision:
    "a handler SDK refused the decision its handler returned (code `invalid_request`); audited as `InvalidDecision`",
  malformed_reply:
    "a reply that is not what its leg promises (code `internal`); raised by the caller, never sent",
  reply_too_large:
    "what a responder sends at once instead of a reply over the server's `max_payload` (code `internal`: the request was fine, and the same request would produce the same reply; `details.bytes`, `details.max_payload`); large tool results travel by reference instead (see [Large results](#large-results))",
  not_started:
    "a tool terminal never began the call (code `unavailable`: nothing was passed on, no effect happened); the executor gives an effectful call's admission back, so a retry with the same operation key may run it",
};

function errorsSection(): string {
  return [
    "## Errors",
    "",
    'A failed request replies `{"error": {"code", "message", "details"?}}`. A bad request never changes',
    "state and never stops a service.",
    "",
    "| code | meaning |",
    "| --- | --- |",
    ...ERROR_CODES.map((c) => `| ${code(c)} | ${cell(ERROR_MEANINGS[c])} |`),
    "",
    "`details.kind` says more where the code alone does not; `details.issues` lists the first",
    "schema issues (`{path, message}`) of a refused body.",
    "",
    "| `details.kind` | meaning |",
    "| --- | --- |",
    ...Object.values(ErrorKind).map((k) => `| ${code(k)} | ${cell(KIND_MEANINGS[k])} |`),
  ].join("\n");
}

function headersSection(): string {
  return [
    "## Headers",
    "",
    "| header | on | meaning |",
    "| --- | --- | --- |",
    `| ${code(INVOCATION_ID_HEADER)} | hook invoke requests | the invocation's id; the caller publishes on ${code(ph(n.hookCancel("{id}")))} to cancel it |`,
    `| ${code(GUARDED_ARGUMENTS_HEADER)} | handler requests of PreToolUse, PermissionRequest and PostToolUse | the call's guarded argument fields (its command, paths and URL, as the tool-kind table places them, and the MCP argument names for an MCP tool or a name of the form the mcp-bridge registers tools under) as compact JSON, taken from its whole input before any bound applies: up to ${GUARDED_FACT_BYTES / 1024} KiB a fact and ${GUARDED_PATHS_MAX} paths, secrets masked. A guard decides on these, not on the bounded payload's copies (docs/policies.md) |`,
    `| ${code(PROBE_HEADER)} | any request | a probe: the responder's bus helper answers ${code('{"probe": "ok"}')} itself (does another replica serve?) |`,
    "| `Nats-Msg-Id` | events and timeline records | the record's `id`: JetStream drops a repeated publish within the duplicate window |",
    `| ${code(TRACEPARENT_HEADER)} | every request, and the events and timeline records a request causes | W3C Trace Context: a responder continues the caller's trace (a missing or invalid one starts a new trace) and passes it on to every message it sends; the recorder stores its trace id as \`trace_id\` |`,
    `| ${code(TRACESTATE_HEADER)} | with \`traceparent\` | passed on unchanged |`,
  ].join("\n");
}

const days = (ms: number): string => `${ms / 86_400_000} days`;

function streamsSection(): string {
  const catalog = RUNTIME_EVENTS.map((e) => `| ${code(e)} | ${retentionBucketOf(e)} |`);
  return [
    "## Streams and events",
    "",
    "The streams are the source of truth; the Postgres projection is rebuilt from them. A component",
    "creates a stream it uses when absent (file storage, old messages discarded first, max age",
    `${days(STREAM_DEFAULTS.maxAgeMs)}, duplicate window ${STREAM_DEFAULTS.duplicateWindowMs / 1000} s,`,
    "`GEODE_STREAM_REPLICAS` replicas) and never reconfigures one that exists.",
    "",
    "| stream | subjects | records |",
    "| --- | --- | --- |",
    `| ${code(ph(n.eventsStream))} | ${code(ph(n.eventsAll))} | one runtime event per message |`,
    `| ${code(ph(n.timelineStream))} | ${code(ph(n.timelineAll))} | one session timeline record per message |`,
    `| ${code(ph(n.checkpointsStream))} | ${code(ph(n.auditCheckpointAll))} | one signed checkpoint per message, every one kept (no max age) |`,
    "",
    "Durable consumers: the activity-recorder replicas share",
    `${code(RECORDER_CONSUMER)} on each stream; the verifier replicas share`,
    `${code(VERIFIER_CONSUMERS.sessionEnded)} (filter ${code(ph(n.timeline("session.ended")))}) and`,
    `${code(VERIFIER_CONSUMERS.subagentStopped)} (filter ${code(ph(n.timeline("subagent.stopped")))}) on the timeline.`,
    "",
    "### Audit checkpoints and gaps",
    "",
    `The notary keeps one Merkle tree per stream, the logs ${code(ph(n.auditLog("events")).replace("/ns/", "/{ns}/"))} and`,
    `${code(ph(n.auditLog("timeline")).replace("/ns/", "/{ns}/"))}, and signs a checkpoint of each when it grew. One message on`,
    `${code(ph(n.auditCheckpoint("{log}" as never)))} per checkpoint, \`Nats-Msg-Id\` \`{log}:{size}\`; \`note\` is the C2SP signed note:`,
    "",
    fieldTable(AuditCheckpointSchema, "output"),
    "",
    `A stream sequence that is gone when the notary reaches it (a deleted message) gets a leaf with the data hash \`deleted\` and one message on ${code(ph(n.auditGap("{log}" as never)))}:`,
    "",
    fieldTable(AuditGapSchema, "output"),
    "",
    "### Runtime events",
    "",
    `One message on ${code(ph(n.event("{event}" as never)))}; payloads are sanitized like hook payloads.`,
    "An event recording a step reaches the stream before the next step that others can observe.",
    "",
    fieldTable(EventEnvelopeSchema, "output"),
    "",
    "`extension_invoked` (one per handler or middleware call) carries only bounded fields, never",
    "payload, instruction, updates or user input:",
    "",
    fieldTable(ExtensionInvokedPayloadSchema, "output"),
    "",
    `The catalog (${RUNTIME_EVENTS.length} values) with each event's retention bucket in the projection`,
    `(${Object.entries(RETENTION_DAYS)
      .map(([b, d]) => `${b} ${d} days`)
      .join(", ")}):`,
    "",
    "| event | retention |",
    "| --- | --- |",
    ...catalog,
    "",
    "### Timeline records",
    "",
    `One message on ${code(ph(n.timeline("{kind}" as never)))}; kinds: ${TIMELINE_KINDS.map(code).join(", ")}.`,
    "",
    fieldTable(TimelineRecordSchema, "output"),
  ].join("\n");
}

/** Key layout, writers and value schema of each bucket (a new bucket needs a row here). */
const BUCKETS: Record<BucketName, { key: string; writer: string; value: z.ZodType | null }> = {
  hookHandlers: {
    key: "`{HookName}.{handler}`",
    writer: "each handler (its own registration and heartbeat)",
    value: HandlerRegistrationSchema,
  },
  toolReceipts: {
    key: "the operation key (`{session_id}.{tool_call_id}` by default), or `sha256.{hex}` of it when it is not a valid KV key",
    writer: "the tool-executor; an operator resolves an `admitted` one (`geode receipts resolve`)",
    value: ReceiptSchema,
  },
  verify: {
    key: "`{session_id}.{turn_id}` (each id as a key token: itself when `[A-Za-z0-9_-]`, else `=` + base64url)",
    writer: "the verifier",
    value: TurnRecordSchema,
  },
  sessions: {
    key: "`{session_id}` (as a key token)",
    writer:
      "the runtime that owns the session (through `@geode/runtime`), the agent gateway for its agents' sessions; the verifier marks one paused",
    value: SessionRecordSchema,
  },
  runs: { key: "`{run_id}`", writer: "the runtime (`runs.open` / `runs.close`)", value: RunRecordSchema },
  tools: {
    key: "the tool name",
    writer: "the provider of a remote tool; the mcp-bridge for the tools of upstream MCP servers",
    value: ToolDefinitionSchema,
  },
  agents: { key: "the agent name", writer: "`geode agents add` / `rm`", value: AgentRecordSchema },
  webhooks: {
    key: "`{HookName}.{handler}`",
    writer: "the operator (`geode handlers add --url`, `geode handlers rm`); read by the hook-dispatcher",
    value: WebhookRecordSchema,
  },
  mcpServers: {
    key: "the upstream MCP server's name (`[a-z][a-z0-9]{0,15}`)",
    writer: "the operator (`geode mcp add`, `geode mcp rm`); read by the mcp-bridge and the agent gateway",
    value: McpServerRecordSchema,
  },
  llmProviders: {
    key: "the provider's name (`[a-z][a-z0-9-]{0,31}`)",
    writer:
      "the operator (`geode llm add`, `geode llm rm`); read by the agent gateway. `key_env` names the gateway's variable holding the provider key; the key is never stored",
    value: LlmProviderRecordSchema,
  },
  llmPrices: {
    key: "`=` + base64url of the model glob",
    writer: "the operator (`geode llm price`); read by the agent gateway to cost each call",
    value: LlmPriceRecordSchema,
  },
  budgets: {
    key: "`{scope}.{name}`: scope `agent`, `group` or `session`",
    writer: "the operator (`geode budget set`, `geode budget rm`); read by the agent gateway",
    value: BudgetRecordSchema,
  },
  llmSpend: {
    key: "`{scope}.{name}.{window}.{window_start}` (`window_start` epoch ms, 0 for a session window)",
    writer: "the agent gateway: each model call added once when it ends (revision-checked)",
    value: BudgetSpendSchema,
  },
  notary: {
    key: "`lease` (the only key)",
    writer: "the active notary (taken, renewed every third of `GEODE_AUDIT_LEASE_MS`, released on stop)",
    value: NotaryLeaseSchema,
  },
  policies: {
    key: "the policy set's name (`[a-z0-9][a-z0-9_-]{0,63}`)",
    writer:
      "the operator (`geode policy add`, `geode policy rm`, after checking the text against the schema); read by the policy-guard",
    value: PolicyRecordSchema,
  },
};

function bucketsSection(): string {
  const entries = Object.entries(n.buckets) as Array<[BucketName, string]>;
  const out = [
    "## KV buckets",
    "",
    "Created by the first component that needs one (file storage, `GEODE_STREAM_REPLICAS` replicas),",
    "never reconfigured. Read-modify-writes are revision-checked (compare-and-set).",
    "Text that came from the wire is stored with its secrets masked, by the store that writes it:",
    "a session's reason, model and provider (cut to 1,024 characters), a parked candidate's text, a",
    "receipt's result, context, correlation and resolution reason, a remote tool's description",
    "(masked only, never cut, so a replay returns the whole result with its secrets masked).",
    "",
    "| bucket | key | history | written by |",
    "| --- | --- | --- | --- |",
    ...entries.map(
      ([b, name]) =>
        `| ${code(ph(name))} | ${cell(BUCKETS[b].key)} | ${BUCKET_HISTORY[b]} | ${cell(BUCKETS[b].writer)} |`,
    ),
  ];
  for (const [b, name] of entries) {
    const value = BUCKETS[b].value;
    if (value) out.push("", `### ${code(ph(name))}`, "", fieldTable(value, "output"));
  }
  return out.join("\n");
}

const KiB = (bytes: number): string => `${bytes / 1024} KiB`;

function largeResultsSection(): string {
  const b = ph(n.resultStore);
  const chunks = (w: Parameters<typeof resultChunkPrefix>[1]) =>
    code(`${resultChunkPrefix(n, w).replace(n.resultStore, b)}.{nuid}`);
  const meta = code(
    resultMetaSubject(n, "x")
      .replace(n.resultStore, b)
      .replace(/[^.]+$/, "{base64url(name)}"),
  );
  return [
    "## Large results",
    "",
    `A tool result whose compact JSON is over \`GEODE_RESULT_INLINE_BYTES\` (default ${KiB(DEFAULT_RESULT_INLINE_BYTES)})`,
    `travels through the Object Store bucket ${code(b)} (stream ${code(n.resultStream.replace("_ns_", "_{ns}_"))}) by reference, on`,
    "both legs: the provider's reply to the tool-executor (`{ns}.tool.terminal.{tool}`) and the",
    "executor's reply to its caller (`{ns}.tool.execute`). `result` is then the reference:",
    "",
    fieldTable(ResultRefSchema, "output"),
    "",
    "`bytes` and `sha256` are those of the result's compact UTF-8 JSON. A result of exactly this shape",
    "is always read as a reference. `@geode/sdk`'s `serveTool` writes references, and",
    "`@geode/runtime`'s tool client resolves them, so neither side sees one; another client reads the",
    "object like any Object Store object (`nats object get`, `@nats-io/obj`) and checks its size and",
    "sha256 against the reference.",
    "",
    "Objects are stored in the Object Store's own format (128 KiB chunks, `ObjectInfo` meta, digest",
    "`SHA-256=` padded base64url), under subjects that say who wrote them:",
    "",
    "| writer | chunks | meta |",
    "| --- | --- | --- |",
    `| the provider of tool \`{tool}\` | ${chunks({ tool: "T" }).replace(".T.", ".{tool token}.")} | ${meta} |`,
    `| the tool-executor (a built-in's result, or one a wrapper changed) | ${chunks("tool-executor")} | ${meta} |`,
    "",
    "The tool token is the tool name when it is made of `[A-Za-z0-9_-]`, else `=` + the base64url of",
    "its name. Object names are `{tool}/{random uuid}`. Before the executor trusts a provider's",
    "reference it checks that the object's chunks are under that tool's subjects and that its size",
    "and sha256 match the reference; anything else is an error result (the effect did run). The",
    "receipt of an effectful call stores the reference, not the result; a replay returns it and the",
    "client resolves it again. The event `tool_result_offloaded` records each leg:",
    "",
    fieldTable(ToolResultOffloadedSchema, "output"),
    "",
    `The tool-executor creates the bucket when absent: file storage, \`GEODE_STREAM_REPLICAS\` replicas,`,
    `TTL \`GEODE_RESULT_TTL_MS\` (default ${days(RESULT_STORE_DEFAULTS.ttlMs)}), size \`GEODE_RESULT_STORE_BYTES\``,
    `(default ${RESULT_STORE_DEFAULTS.maxBytes / 1024 ** 3} GiB, discard new: a full bucket refuses new results and keeps the stored ones),`,
    "rollup headers off (a writer cannot wipe the bucket). A reference that outlives its object (a",
    "receipt replayed after the TTL) is answered with the reply's status, `has_error: true` and",
    '`result: {"error": "…no longer in {ns}_results…", "result_ref": {…}}`: the operation is never',
    "run again. PostToolUse handlers see the bounded payload of [hooks.md](hooks.md#limits), as for any",
    "result. A reply that still cannot be sent (over the server's `max_payload`) is answered at once",
    "with the error `internal`, kind `reply_too_large`.",
  ].join("\n");
}

const VERIFICATION = `## Verification

\`\`\`
candidate → PreVerify → built-in verifier → PostVerify → Stop → deliver
                                   ^             |        |
                                   +--- revise --+--------+
\`\`\`

- PreVerify may only add requirements: \`strengthen\` misses are merged into the built-in result,
  which then fails with \`should_retry\`.
- Built-in verifier (\`rule_based\`): an empty candidate is the miss \`empty_candidate\` (retryable); a
  termination reason other than \`natural\`, \`forced_text\` or \`actionable_partial\` is the miss
  \`termination:<reason>\` (not retryable); rubric checks add \`missing:<pattern>\` /
  \`forbidden:<pattern>\` misses (retryable). The score is the share of checks passed.
- PostVerify composition: with no decision, pass → accept, retryable failure → revise, other
  failure → escalate. With decisions: any escalate (or an accept of a failed built-in result) →
  escalate; else any revise → revise with its instruction; else accept if passed, otherwise
  \`built_in_fail\`. Stop may then \`continue\` with an instruction (not after escalate).
- Revise/continue is limited to 2 consecutive attempts per root turn: a revise or continue decided at
  attempt 2 or later becomes \`escalate_budget_exhausted\`. The attempt number is the verifier's own
  count (KV \`{ns}_verify\`), not the caller's word.
- Escalate, \`escalate_budget_exhausted\` and \`built_in_fail\` park the candidate: the session is marked
  paused (reason \`external_verification_required\`), the text goes only to the external owner as
  \`pending_text\`, and \`{ns}.verify.resolve\` delivers or revises it later.`;

const PROJECTION = `## Projection

The activity-recorder is the only writer of the Postgres projection (schema \`{ns}\`). One durable
consumer per stream; a batch is written in one transaction together with the consumer's last applied
sequence, then acked, so redelivery never duplicates a row. The correlation ids are columns named like
their fields.

| table | rows |
| --- | --- |
| \`activity_events\` | every runtime event: \`stream_seq\`, \`event_id\`, \`event\`, \`ts\`, \`source\`, the correlation ids, \`retention_bucket\`, bounded \`payload\` (of an \`extension_invoked\`: its audit fields and its \`reason\`, cut to 512 characters and sanitized, nothing else), \`trace_id\` (from the event's \`traceparent\` header, null without one) |
| \`extension_invocations\` | one audit row per \`extension_invoked\`: \`stream_seq\`, \`ts\`, \`surface\`, \`name\`, \`extension\`, \`status\`, \`latency_ms\`, the correlation ids, \`trace_id\`, nothing else (no user input, request, response, personal data or secret) |
| \`session_events\` | the timeline: \`stream_seq\`, \`record_id\`, \`kind\`, \`ts\`, \`source\`, the correlation ids, bounded \`payload\`, \`payload_sha256\` |
| \`projection_offsets\` | \`consumer\`, \`stream\`, \`last_seq\` |
| \`quarantined_messages\` | a message PostgreSQL refused for its content (docs/operations.md#quarantined-messages): \`stream\`, \`stream_seq\`, \`subject\`, \`name\`, \`session_id\`, \`consumer\`, \`sqlstate\`, \`error\`, \`message_sha256\`, \`message_bytes\`, \`quarantined_at\`; no payload |

Run timeline: while a run is open (KV \`{ns}_runs\`), the recorder mirrors the same rows of that run to
\`{GEODE_RUNS_DIR}/{run_id}/events.jsonl\`; a file stops at 16 MiB with one \`projection.truncated\` row.
\`geode replay\` rebuilds the projection from the streams; the result equals the live projection row
for row.`;

const CONFIGURATION = `## Configuration

Every component reads its settings from the environment at start-up and stops with a clear message on
a bad value. The variables, their defaults and meanings are the table of
[docs/operations.md](operations.md#configuration), generated from the components' environment specs
(\`pnpm docs:config\`).`;

function gatewaySection(): string {
  return [
    "## Agent gateway",
    "",
    "HTTP for agents with hook systems of their own (`GEODE_GATEWAY_ADDR`, default `127.0.0.1:4280`).",
    '`GET /healthz` → 200 `{"status":"ok"}`. Every other request carries `Authorization: Bearer <token>`',
    "of an agent in KV `{ns}_agents` (only the token's SHA-256 is stored); a missing or unknown token",
    "→ 401 and nothing is invoked; the gateway logs the refusal (a warning, at most one per remote",
    "address a minute, with the first 12 hex digits of the token's SHA-256, never the token); an",
    "`Authorization` or `traceparent` header given twice → 400.",
    "",
    `\`POST ${CLAUDE_CODE_HOOK_PATH}\`: the body is Claude Code's hook input as Claude Code sends it; the`,
    "reply is 200 with Claude Code's hook output JSON (`{}` when there is nothing to say); an",
    "unparseable body → 400. A `failure_mode: closed` guard that fails or cannot be reached gives a",
    "deny/block with a 200 reply.",
    "",
    "`POST /v1/mcp` (DESIGN section 19): the gateway as one MCP server in front of the upstream servers",
    "the mcp-bridge registers. Streamable HTTP, stateless: protocol 2026-07-28 (`server/discover`, the",
    "`_meta` envelope, `Mcp-Method`/`Mcp-Name` headers that must agree with the body, else `-32020`)",
    "and 2025-03-26, 2025-06-18, 2025-11-25 without sessions (no `Mcp-Session-Id`); GET → 405. A",
    "missing or unknown token → 401 with `WWW-Authenticate: Bearer`; `/.well-known/oauth-*`,",
    "`/.well-known/openid-configuration` and `POST /register` → 404 at once; a Host or Origin other than",
    "localhost or the listen host → 403; a body over 4 MiB → 413 with a JSON-RPC error. `tools/list`",
    "lists the tools in `{ns}_tools` that carry `mcp`, of servers whose `groups` include one of the",
    "agent's (absent: all). `tools/call` runs `{ns}.tool.execute` with the registered name and a fresh",
    "`tool_call_id`: completed or replayed → the upstream's `CallToolResult`, PostToolUse `add_context`",
    "reasons appended as text items; any other status or an unknown tool → `{isError: true, content:",
    '[{type: "text", text: <reason>}]}`. `resources/list|read`, `resources/templates/list`,',
    "`prompts/list|get` go to `{ns}.mcp.forward.{server}` with the `{server}_` prefix taken off the uri",
    "or name (and put on the listed ones), each recorded as timeline `mcp.read`. Sessions: `agent_kind`",
    "`mcp`, one per (agent, client name) until `GEODE_MCP_SESSION_IDLE_MS` passes without a call.",
    "",
    "`/v1/llm/{provider}/{path}` (DESIGN section 21, [llm.md](llm.md)): forwarded to the provider record's",
    "`{base_url}/{path}` (KV `{ns}_llm_providers`). The agent's token comes in its SDK's key slot",
    "(`Authorization: Bearer`, `x-api-key`, `x-goog-api-key` or `?key=`) and is replaced by the value of",
    "the gateway's variable `key_env`. Model calls (OpenAI `responses` and `chat/completions`, Anthropic",
    "`messages`, Gemini `models/{model}:generateContent|streamGenerateContent`) publish",
    "`llm_call_started` `{provider, model, stream}` and `llm_call_ended` `{provider, model, input_tokens,",
    "cached_input_tokens, output_tokens, cost_usd, duration_ms, status, stream}` (or `llm_call_failed`",
    "with `error`), correlated by `x-geode-session` or one session per agent per idle gap, with a fresh",
    "`llm_call_id`; other paths are forwarded unmetered. The answer is passed back chunk by chunk.",
    "Refusals come in the provider's own error shape: unknown provider 404, missing or unknown token",
    "401, a model outside `models` 403, a body over `GEODE_LLM_MAX_BODY_BYTES` 413, no key in the",
    "gateway's environment 503, provider unreachable 502, no answer within `GEODE_LLM_TIMEOUT_MS` 504,",
    "a spent budget 429 `cost_limit_exceeded` with `Retry-After` and `x-should-retry: false`, a request",
    "rate over `requests_per_minute` 429 `rate_limit_exceeded`. A provider's own error is passed on as",
    "it came; a stream the provider cuts is cut for the agent too.",
    "",
    "Correlation of a call: `session_id` = Claude Code's `session_id`, `run_id` = the same (each Claude",
    "Code session is a run), `turn_id` = `prompt_id` when present, `tool_call_id` = `tool_use_id`.",
    "`transcript_path` and `cwd` are never forwarded.",
    "",
    "| Claude Code event | on the plane | guards (fail-closed can block) | sent to http hooks |",
    "| --- | --- | --- | --- |",
    ...CLAUDE_CODE_EVENTS.map(
      (e) =>
        `| ${code(e.event)} | ${e.plane === null ? "runtime events only" : e.plane === "verifier" ? code(ph(n.verifyFinalize)) : `hook ${code(e.plane)}`} | ${e.guards ? "yes" : "no"} | ${e.http ? "yes" : "no (command hook: `geode hook-shim`)"} |`,
    ),
    "",
    `\`POST ${agentCheckPath("/v1/<kind>/hook")}\` (beside each kind's hook endpoint, the same token): the end of`,
    '`geode connect <kind> --check` reports its result; 200 `{"recorded":true}`, another body → 400.',
    `It is recorded as \`adapter_dispatch_attempt\` \`{adapter, hook_event_name: "${AGENT_CHECK_EVENT}", agent, check: "ok"|"problem", detail}\``,
    "in no session (`detail` cut to 512 characters, secrets masked). The gateway also records, per agent, kind and",
    `guarded hook (${GUARDED_TOOL_HOOKS.map(code).join(", ")}), that it arrived: \`adapter_dispatch_attempt\``,
    "`{adapter, hook_event_name, agent, guarded: true}`, at most once an hour on each replica. A tool result whose",
    'PreToolUse never reached the gateway is the timeline record `governance.gap` `{agent, agent_kind, tool_name, missing: "PreToolUse"}`.',
    "",
    fieldTable(AgentCheckReportSchema, "input"),
    "",
    opencodeSection(),
  ].join("\n");
}

/** The body `@geode/opencode-plugin` posts (opencode has no hooks of its own to send one). */
function opencodeSection(): string {
  return [
    "### opencode plugin body",
    "",
    `\`POST ${OPENCODE_HOOK_PATH}\`: opencode has no command or HTTP hooks, so the body is the one its plugin`,
    "`@geode/opencode-plugin` posts for each hook or session event (docs/opencode.md), `event` naming it;",
    'another body → 400. The reply is 200 with what the plugin does: `{}` (go on), `decision: "deny"`',
    'with `reason` (it throws the reason, or denies the permission), `decision: "allow"` (a',
    "permission), `args` (the arguments to run instead), `output` (the tool result the model reads",
    "instead), `context` (appended to it). Every body:",
    "",
    fieldTable(OpencodeHookInputSchema, "input"),
    "",
    "| event | more fields | guards (fail-closed can block) |",
    "| --- | --- | --- |",
    ...OPENCODE_EVENTS.map((e) => {
      const fields = Object.keys(OpencodeEventFields[e.event].shape);
      return `| ${code(e.event)} | ${fields.length === 0 ? "none" : fields.map(code).join(", ")} | ${e.guards ? "yes" : "no"} |`;
    }),
  ].join("\n");
}

/** docs/protocol.md as it must be. */
export function renderProtocolDoc(): string {
  return `${[
    "# Wire protocol",
    "",
    "<!-- Generated by `pnpm docs:protocol` from @geode/contracts (scripts/protocol-docs.ts). Do not edit: a test fails when this file is stale. -->",
    "",
    "What crosses NATS between the components of the extension plane and what they keep in JetStream,",
    "KV and Postgres. The hook payloads and decisions are in [hooks.md](hooks.md); how the parts fit",
    "together is in [architecture.md](architecture.md).",
    "",
    "- [Names](#names)",
    "- [Request/reply legs](#requestreply-legs)",
    "- [Errors](#errors)",
    "- [Headers](#headers)",
    "- [Streams and events](#streams-and-events)",
    "- [KV buckets](#kv-buckets)",
    "- [Large results](#large-results)",
    "- [Verification](#verification)",
    "- [Projection](#projection)",
    "- [Configuration](#configuration)",
    "- [Agent gateway](#agent-gateway)",
    "",
    namesSection(),
    "",
    legsSection(),
    "",
    errorsSection(),
    "",
    headersSection(),
    "",
    streamsSection(),
    "",
    bucketsSection(),
    "",
    largeResultsSection(),
    "",
    VERIFICATION,
    "",
    PROJECTION,
    "",
    CONFIGURATION,
    "",
    gatewaySection(),
  ].join("\n")}\n`;
}

if (process.argv[1] === import.meta.filename) {
  writeFileSync(PROTOCOL_DOC, renderProtocolDoc());
}

/** The committed file (for the freshness test). */
export function committedProtocolDoc(): string {
  return readFileSync(PROTOCOL_DOC, "utf8");
}
