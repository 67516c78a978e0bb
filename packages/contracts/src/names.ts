import { z } from "zod";
import type { HookName } from "./hook-name.js";
import type { RuntimeEvent, TimelineKind } from "./runtime-event.js";

export const NAMESPACE_PATTERN = /^[a-z][a-z0-9_]{0,31}$/;
const NamespaceSchema = z.string().regex(NAMESPACE_PATTERN, "namespace must match [a-z][a-z0-9_]{0,31}");
export const DEFAULT_NAMESPACE = "geode";
export const HANDLER_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Header carrying a hook invocation's id, so the caller can cancel it on `{ns}.hook.cancel.{id}`. */
export const INVOCATION_ID_HEADER = "Geode-Invocation-Id";
export const INVOCATION_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * Header of a probe: a request carrying it is answered `{"probe": "ok"}` by the responder's bus
 * helper itself, never by the code behind it (a handler SDK asks whether another replica serves).
 */
export const PROBE_HEADER = "Geode-Probe";
/**
 * Run ids name a KV key and a directory (`{GEODE_RUNS_DIR}/{run_id}`), so they are one safe path
 * segment: letters, digits, `_`, `-`, `.` (no leading or trailing dot), at most 128 characters.
 */
export const RUN_ID_PATTERN = /^(?!\.+$)[A-Za-z0-9_.-]{1,128}$/;

export function isValidRunId(runId: string): boolean {
  return RUN_ID_PATTERN.test(runId) && !runId.startsWith(".") && !runId.endsWith(".");
}

export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
/** Agent names (KV `{ns}_agents` keys) of the agent gateway. */
export const AGENT_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** Policy set names (KV `{ns}_policies` keys) and agent group names. */
export const POLICY_SET_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export const SERVICE_NAMES = [
  "hook-dispatcher",
  "tool-executor",
  "verifier",
  "activity-recorder",
  "agent-gateway",
  "policy-guard",
  "mcp-bridge",
  "notary",
] as const;

/** The audit logs of DESIGN section 20: one per stream, named `geode/{ns}/{log}`. */
export const AUDIT_LOGS = ["events", "timeline"] as const;
export type AuditLogName = (typeof AUDIT_LOGS)[number];

/** The durable consumer the activity-recorder replicas share on each stream. */
export const RECORDER_CONSUMER = "activity-recorder";

/**
 * The recorder's lag on one stream, the one formula the metric `geode_recorder_lag_messages` and
 * the console both use: the stream's last sequence minus the sequence the recorder's durable
 * consumer has acknowledged up to (acked only after the commit). Messages already gone from the
 * stream (retention) are not waiting for anyone.
 */
export function recorderLagMessages(
  stream: { last_seq: number; first_seq: number },
  ackFloorSeq: number,
): number {
  const applied = Math.max(ackFloorSeq, stream.first_seq - 1);
  return Math.max(0, stream.last_seq - applied);
}

/**
 * The durable consumers the verifier replicas share on the timeline stream: each session's
 * verification state is cleared when its `session.ended` (or, for a sub-agent's child session,
 * `subagent.stopped`) record arrives, also when that happened while no verifier ran.
 */
export const VERIFIER_CONSUMERS = {
  sessionEnded: "verifier-session-ended",
  subagentStopped: "verifier-subagent-stopped",
} as const;

/** Queue groups of docs/protocol.md#names. */
export const QueueGroup = {
  HookDispatcher: "hook-dispatcher",
  ToolExecutor: "tool-executor",
  Approvers: "approvers",
  Verifier: "verifier",
} as const;

/** Every wire name of one deployment, derived from its namespace. */
export interface Names {
  readonly ns: string;
  readonly NS: string;
  hookInvoke(hook: HookName | string): string;
  readonly hookInvokeAll: string;
  /**
   * Cancels an invocation in flight (see docs/protocol.md#headers): the caller publishes an empty
   * message here, with the id it sent in the `Geode-Invocation-Id` header, when it gives up.
   */
  hookCancel(invocationId: string): string;
  readonly hookCancelAll: string;
  hookHandler(hook: HookName, handler: string): string;
  readonly hookHandlerAll: string;
  readonly toolExecute: string;
  toolTerminal(tool: string): string;
  readonly approvalRequest: string;
  /** The mcp-bridge's forwarding of resources and prompts of upstream `server` (DESIGN section 19). */
  mcpForward(server: string): string;
  readonly verifyFinalize: string;
  readonly verifyResolve: string;
  health(service: string): string;
  event(value: RuntimeEvent): string;
  readonly eventsAll: string;
  timeline(kind: TimelineKind): string;
  readonly timelineAll: string;
  readonly eventsStream: string;
  readonly timelineStream: string;
  /** The origin of an audit log's checkpoints: `geode/{ns}/{log}` (DESIGN section 20). */
  auditLog(log: AuditLogName): string;
  /** The stream of an audit log: `{NS}_EVENTS` or `{NS}_TIMELINE`. */
  auditStream(log: AuditLogName): string;
  /** Signed checkpoints of a log: `{ns}.audit.checkpoint.{log}` (stream `{NS}_CHECKPOINTS`). */
  auditCheckpoint(log: AuditLogName): string;
  readonly auditCheckpointAll: string;
  /** A gap in a log's stream sequences: `{ns}.audit.gap.{log}`. */
  auditGap(log: AuditLogName): string;
  readonly auditGapAll: string;
  /** Stream of every signed checkpoint, all kept: `{NS}_CHECKPOINTS`. */
  readonly checkpointsStream: string;
  readonly buckets: {
    readonly hookHandlers: string;
    readonly toolReceipts: string;
    readonly verify: string;
    readonly sessions: string;
    readonly runs: string;
    readonly tools: string;
    readonly agents: string;
    readonly webhooks: string;
    readonly policies: string;
    /** Upstream MCP servers of the mcp-bridge (DESIGN section 19). */
    readonly mcpServers: string;
    /** The notary's lease: one active instance (DESIGN section 20). */
    readonly notary: string;
    /** Model providers the agent-gateway fronts (DESIGN section 21). */
    readonly llmProviders: string;
    /** Model prices, USD per million tokens (DESIGN section 21). */
    readonly llmPrices: string;
    /** Budgets per agent, group and session (DESIGN section 21). */
    readonly budgets: string;
    /** What each budget window has used: the agent-gateway's counters. */
    readonly llmSpend: string;
  };
  /** Object Store bucket of large tool results (docs/protocol.md#large-results). */
  readonly resultStore: string;
  /** Its backing stream, `OBJ_{ns}_results`. */
  readonly resultStream: string;
  /** Postgres schema of the projection. */
  readonly pgSchema: string;
  /** KV key of a handler registration. */
  handlerKey(hook: HookName, handler: string): string;
  /** KV key of a session in `{ns}_sessions`: the session id as a key token (see `kvKeyToken`). */
  sessionKey(sessionId: string): string;
  /** KV key of a root turn's verification state in `{ns}_verify`: `{session_id}.{turn_id}`. */
  verifyKey(sessionId: string, turnId: string): string;
  /** KV key filter of every root turn of one session in `{ns}_verify`. */
  verifySessionFilter(sessionId: string): string;
}

const PLAIN_KEY_TOKEN = /^[A-Za-z0-9_-]{1,200}$/;

/**
 * An id as one KV key token. Ids made of `[A-Za-z0-9_-]` are used as they are (so
 * `{session_id}.{turn_id}` reads as written); any other id (dots, spaces, non-ASCII, empty) becomes
 * `=` + its base64url UTF-8 bytes. `=` never occurs in a plain token, so the two forms cannot collide,
 * and a session's keys never match another session's filter.
 */
function kvKeyToken(id: string): string {
  if (PLAIN_KEY_TOKEN.test(id)) return id;
  return `=${Buffer.from(id, "utf8").toString("base64url")}`;
}

/** Builds every subject, stream, bucket and schema name for namespace `ns`. */
export function names(ns: string = DEFAULT_NAMESPACE): Names {
  NamespaceSchema.parse(ns);
  const NS = ns.toUpperCase();
  return {
    ns,
    NS,
    hookInvoke: (hook) => `${ns}.hook.invoke.${hook}`,
    hookInvokeAll: `${ns}.hook.invoke.>`,
    hookCancel: (id) => `${ns}.hook.cancel.${id}`,
    hookCancelAll: `${ns}.hook.cancel.*`,
    hookHandler: (hook, handler) => `${ns}.hook.handler.${hook}.${handler}`,
    hookHandlerAll: `${ns}.hook.handler.>`,
    toolExecute: `${ns}.tool.execute`,
    toolTerminal: (tool) => `${ns}.tool.terminal.${tool}`,
    approvalRequest: `${ns}.approval.request`,
    mcpForward: (server) => `${ns}.mcp.forward.${server}`,
    verifyFinalize: `${ns}.verify.finalize`,
    verifyResolve: `${ns}.verify.resolve`,
    health: (service) => `${ns}.health.${service}`,
    event: (value) => `${ns}.events.${value}`,
    eventsAll: `${ns}.events.>`,
    timeline: (kind) => `${ns}.timeline.${kind}`,
    timelineAll: `${ns}.timeline.>`,
    eventsStream: `${NS}_EVENTS`,
    timelineStream: `${NS}_TIMELINE`,
    auditLog: (log) => `geode/${ns}/${log}`,
    auditStream: (log) => (log === "events" ? `${NS}_EVENTS` : `${NS}_TIMELINE`),
    auditCheckpoint: (log) => `${ns}.audit.checkpoint.${log}`,
    auditCheckpointAll: `${ns}.audit.checkpoint.>`,
    auditGap: (log) => `${ns}.audit.gap.${log}`,
    auditGapAll: `${ns}.audit.gap.>`,
    checkpointsStream: `${NS}_CHECKPOINTS`,
    buckets: {
      hookHandlers: `${ns}_hook_handlers`,
      toolReceipts: `${ns}_tool_receipts`,
      verify: `${ns}_verify`,
      sessions: `${ns}_sessions`,
      runs: `${ns}_runs`,
      tools: `${ns}_tools`,
      agents: `${ns}_agents`,
      webhooks: `${ns}_webhooks`,
      policies: `${ns}_policies`,
      mcpServers: `${ns}_mcp_servers`,
      notary: `${ns}_notary`,
      llmProviders: `${ns}_llm_providers`,
      llmPrices: `${ns}_llm_prices`,
      budgets: `${ns}_budgets`,
      llmSpend: `${ns}_llm_spend`,
    },
    resultStore: `${ns}_results`,
    resultStream: `OBJ_${ns}_results`,
    pgSchema: ns,
    handlerKey: (hook, handler) => `${hook}.${handler}`,
    sessionKey: (sessionId) => kvKeyToken(sessionId),
    verifyKey: (sessionId, turnId) => `${kvKeyToken(sessionId)}.${kvKeyToken(turnId)}`,
    verifySessionFilter: (sessionId) => `${kvKeyToken(sessionId)}.>`,
  };
}
