import { z } from "zod";
import { AgentKindSchema, AgentNameSchema } from "./agent-record.js";
import { HookNameSchema } from "./hook-name.js";
import { TOOL_KINDS } from "./tool-kinds.js";

/*
 * The console's "sessions at a glance" (docs/console.md): the query strings and replies of
 * `GET /api/sessions`, `GET /api/sessions/{session_id}/story`, `GET /api/stats` and
 * `DELETE /api/handlers/{hook}/{name}`. Query values arrive as strings; each schema turns them
 * into what the server uses, and a value it refuses is a 400 naming the parameter.
 */

const int = z.number().int();
const count = int.min(0);
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.join(", ")}` });

/** A session's agent kind: a gateway agent's, or `runtime` for a runtime's own session. */
const SESSION_AGENT_KINDS = ["runtime", ...AgentKindSchema.options] as const;
export const SessionAgentKindSchema = z.enum(SESSION_AGENT_KINDS);
export type SessionAgentKind = z.infer<typeof SessionAgentKindSchema>;

/** A session's state as the list shows it. */
const SESSION_STATUSES = ["active", "paused", "completed", "error"] as const;
const ConsoleSessionStatusSchema = z.enum(SESSION_STATUSES);
export type ConsoleSessionStatus = z.infer<typeof ConsoleSessionStatusSchema>;

/** An instant: epoch milliseconds, or an ISO 8601 date-time. */
const instant = z
  .string()
  .max(40, { error: "must be epoch milliseconds or an ISO 8601 date-time" })
  .transform((raw, ctx) => {
    const ms = /^\d{1,15}$/.test(raw)
      ? Number(raw)
      : /^\d{4}-\d\d-\d\d/.test(raw)
        ? Date.parse(raw)
        : Number.NaN;
    if (Number.isFinite(ms)) return ms;
    ctx.addIssue({ code: "custom", message: "must be epoch milliseconds or an ISO 8601 date-time" });
    return z.NEVER;
  });

const limitParam = z
  .string()
  .regex(/^\d{1,3}$/, { error: "must be an integer between 1 and 200" })
  .transform(Number)
  .refine((n) => n >= 1 && n <= 200, { error: "must be an integer between 1 and 200" });

/** Refuses query parameters the route does not know (a typo must not silently list everything). */
const onlyTheseParams = {
  error: (issue: z.core.$ZodRawIssue) =>
    issue.code === "unrecognized_keys"
      ? `unknown query parameter(s): ${issue.keys.slice(0, 8).join(", ")}`
      : undefined,
};

/** What a session search may contain (session ids are matched by substring). */
export const SESSION_QUERY_PATTERN = /^[A-Za-z0-9_.:@-]{1,128}$/;

/** `GET /api/sessions` query (every parameter optional; `status=paused` lists parked turns instead). */
export const ConsoleSessionsQuerySchema = z.strictObject(
  {
    agent: AgentNameSchema.optional(),
    agent_kind: oneOf(SESSION_AGENT_KINDS).optional(),
    status: oneOf(SESSION_STATUSES).optional(),
    has_blocks: oneOf(["true", "false"])
      .transform((v) => v === "true")
      .optional(),
    since: instant.optional(),
    until: instant.optional(),
    q: z.string().regex(SESSION_QUERY_PATTERN, { error: "must match [A-Za-z0-9_.:@-]{1,128}" }).optional(),
    cursor: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,512}$/, { error: "must be the next cursor of a previous page" })
      .optional(),
    limit: limitParam.optional(),
    offset: z.string().optional(),
  },
  onlyTheseParams,
);
export type ConsoleSessionsQuery = z.output<typeof ConsoleSessionsQuerySchema>;

/** `GET /api/sessions`: one agent session at a glance. */
export const ConsoleSessionSummarySchema = z.strictObject({
  session_id: z.string(),
  /** The gateway agent (its token's name); null for a runtime's own session. */
  agent: z.string().nullable(),
  agent_kind: SessionAgentKindSchema,
  started_at: int,
  /** When the session ended; null while it is active (or paused). */
  ended_at: int.nullable(),
  status: ConsoleSessionStatusSchema,
  prompts: count,
  tool_calls: count,
  /** Tool calls and prompts a handler or policy blocked. */
  blocked: count,
  /** Tool calls a person (an approver) or a handler allowed after a permission request. */
  approved: count,
  /** Tool calls denied at a permission request (a handler, a person, or nobody answering). */
  denied: count,
  /** The last verification's policy action (`accept`, `revise`, `escalate`, …); null if none ran. */
  verification: z.string().nullable(),
  /** Tool calls whose result reached the plane without their PreToolUse (`governance.gap`): nobody governed them. */
  gaps: count,
});
export type ConsoleSessionSummary = z.infer<typeof ConsoleSessionSummarySchema>;

/** `GET /api/sessions`'s reply: `next` is the cursor of the following page, null on the last. */
export const ConsoleSessionsPageSchema = z.strictObject({
  items: z.array(ConsoleSessionSummarySchema),
  next: z.string().nullable(),
});
export type ConsoleSessionsPage = z.infer<typeof ConsoleSessionsPageSchema>;

export const STORY_STEP_KINDS = [
  "prompt",
  "tool_call",
  "compaction",
  "subagent",
  "verification",
  "llm_call",
] as const;
/** A tool call's verdict: who let it run, or who stopped it. */
export const TOOL_VERDICTS = ["allowed", "blocked", "approved", "denied"] as const;

/** One step of a session's story. Never a prompt's text: a prompt is its length and verdict. */
export const ConsoleStoryStepSchema = z.strictObject({
  /** Milliseconds since the session started. */
  at_ms: count,
  ts: int,
  kind: z.enum(STORY_STEP_KINDS),
  turn_id: z.string(),
  tool_call_id: z.string().nullable(),
  /** The tool (tool calls), the sub-agent's task type (sub-agents); null when not recorded. */
  tool_name: z.string().nullable(),
  tool_kind: z.enum(TOOL_KINDS).nullable(),
  /**
   * An MCP tool call's upstream: the server and the upstream's own name of the tool (at most 128
   * characters), from the call's records (a tool the mcp-bridge registered) or an agent's MCP tool
   * name (`mcp__server__tool`); null for any other step.
   */
  mcp: z.strictObject({ server: z.string(), tool: z.string() }).nullable(),
  /**
   * A model call through the LLM gateway (`llm_call_*`, or a call a budget refused,
   * `cost_limit_exceeded`): provider, model, tokens and cost, never its prompt or completion; null
   * for any other step.
   */
  llm: z
    .strictObject({
      provider: z.string().nullable(),
      model: z.string().nullable(),
      input_tokens: count.nullable(),
      cached_input_tokens: count.nullable(),
      output_tokens: count.nullable(),
      cost_usd: z.number().min(0).nullable(),
      /** The provider's HTTP status (429 for a refused call); null while the call runs. */
      status: int.nullable(),
      stream: z.boolean().nullable(),
      /** The budget that refused the call. */
      budget: z.string().nullable(),
    })
    .nullable(),
  /** A prompt's length in characters. */
  length: count.nullable(),
  /**
   * Tool calls: allowed, blocked, approved, denied; prompts: allowed, blocked, rewritten;
   * verification: the policy action; sub-agents: started, completed, failed; compactions: done;
   * model calls: allowed, refused (by a budget).
   */
  verdict: z.string().nullable(),
  /** Who decided: a handler's name, `policy` (the operator's tool policy), a person, `runtime_default`. */
  decided_by: z.string().nullable(),
  /**
   * What a tool call acted on, or would have: its shell command, else its file paths, else its URL
   * (at most 120 characters, secret-looking parts masked, shown as text); null for a tool without
   * any, or when not recorded.
   */
  target: z.string().nullable(),
  /**
   * Why a tool call was blocked or denied, or a prompt blocked: the refusal record's reason
   * (`handler: reason`, the policy's or the approver's words), else the deciding handler's audited
   * reason; at most 512 characters, as text; null when none was recorded.
   */
  reason: z.string().nullable(),
  /** How it ended (a tool call's completed/failed/…, a verification's pass or fail, a model call's ended/failed/running/not run). */
  outcome: z.string().nullable(),
  duration_ms: z.number().nullable(),
  /** A tool call whose result reached the plane without its PreToolUse (`governance.gap`): it ran ungoverned. */
  governance_gap: z.boolean(),
});
export type ConsoleStoryStep = z.infer<typeof ConsoleStoryStepSchema>;

/** `GET /api/sessions/{session_id}/story`. */
export const ConsoleSessionStorySchema = z.strictObject({
  session: ConsoleSessionSummarySchema.extend({
    /** The runs the session's records belong to (their raw timelines: `/api/runs/{run_id}/timeline`). */
    run_ids: z.array(z.string()),
  }),
  steps: z.array(ConsoleStoryStepSchema),
});
export type ConsoleSessionStory = z.infer<typeof ConsoleSessionStorySchema>;

/** The windows `GET /api/stats` takes, and their length. */
export const STATS_WINDOWS = {
  "15m": 15 * 60_000,
  "1h": 60 * 60_000,
  "6h": 6 * 60 * 60_000,
  "24h": 24 * 60 * 60_000,
} as const;

/** `GET /api/stats` query. */
export const ConsoleStatsQuerySchema = z.strictObject(
  { window: oneOf(Object.keys(STATS_WINDOWS) as ["15m", "1h", "6h", "24h"]).optional() },
  onlyTheseParams,
);

const series = z.array(count);
const latencies = z.array(z.number().nullable());

/** `GET /api/stats`: audited handler calls over the window, in buckets, and the recorder's lag. */
export const ConsoleStatsSchema = z.strictObject({
  window: z.string(),
  window_ms: count,
  bucket_ms: count,
  /** Start of each bucket, epoch ms (the series below have one value per bucket). */
  buckets: z.array(int),
  by_agent: z.array(z.strictObject({ agent: z.string(), calls: series, blocks: series })),
  by_hook: z.array(z.strictObject({ hook: z.string(), calls: series, blocks: series })),
  /** Handler call latency over all hooks per bucket, in ms (null for a bucket without calls). */
  latency: z.strictObject({ p50: latencies, p95: latencies, p99: latencies }),
  latency_by_hook: z.array(
    z.strictObject({ hook: z.string(), calls: count, p50: z.number(), p95: z.number(), p99: z.number() }),
  ),
  /** The recorder's lag per stream (messages not yet applied; null when its consumer is missing). */
  recorder: z.array(z.strictObject({ stream: z.string(), lag: count.nullable() })),
});
export type ConsoleStats = z.infer<typeof ConsoleStatsSchema>;

/** `DELETE /api/handlers/{hook}/{name}`'s reply. */
export const ConsoleHandlerRemovedSchema = z.strictObject({
  hook: HookNameSchema,
  name: z.string(),
  removed: z.literal(true),
});
export type ConsoleHandlerRemoved = z.infer<typeof ConsoleHandlerRemovedSchema>;
