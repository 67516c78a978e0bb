import {
  agentMcpTool,
  type ConsoleSessionStory,
  type ConsoleSessionSummary,
  type ConsoleStoryStep,
  MCP_SERVER_NAME_PATTERN,
  TOOL_TARGET_CHARS,
  type ToolOwner,
  toolKindOf,
} from "@geode/contracts";
import { sql } from "kysely";
import { type ConsoleProjection, sessionSummary, tables } from "./session-list.js";

/** At most this many rows of each table are read for one story (the oldest first). */
const MAX_ROWS = 5000;
/** A refusal's reason is shown cut to this many characters (as the dispatcher cuts audit reasons). */
const REASON_CHARS = 512;
/** An MCP tool's upstream name is shown cut to this many characters. */
const MCP_TOOL_CHARS = 128;

/** A runtime event of the session (only the payload fields a story shows; never a prompt's text). */
export interface StoryEvent {
  seq: number;
  event: string;
  ts: number;
  turn_id: string;
  tool_call_id: string;
  llm_call_id: string;
  run_id: string;
  payload: Record<string, unknown>;
}

/** An audited handler call of the session, with its `extension_invoked` event's reason if any. */
export interface StoryInvocation {
  seq: number;
  ts: number;
  name: string;
  extension: string;
  status: string;
  latency_ms: number;
  turn_id: string;
  tool_call_id: string;
  step_id: string;
  run_id: string;
  /** The handler's reason (a block's or deny's words), as its `extension_invoked` event kept it. */
  reason: string | null;
}

/** A timeline record of the session. */
export interface StoryRecord {
  seq: number;
  kind: string;
  ts: number;
  turn_id: string;
  tool_call_id: string;
  run_id: string;
  record_id: string;
  payload: Record<string, unknown>;
}

export interface StoryRows {
  events: StoryEvent[];
  invocations: StoryInvocation[];
  records: StoryRecord[];
}

const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
/** A text as the story shows it: at most `max` characters (a reason's REASON_CHARS by default). */
const cut = (v: string | null, max = REASON_CHARS): string | null =>
  v === null ? null : [...v].slice(0, max).join("");
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** What a step starts as; the builders fill in the rest. */
function step(kind: ConsoleStoryStep["kind"], ts: number, turnId: string): ConsoleStoryStep {
  return {
    at_ms: 0,
    ts,
    kind,
    turn_id: turnId,
    tool_call_id: null,
    tool_name: null,
    tool_kind: null,
    mcp: null,
    llm: null,
    target: null,
    length: null,
    verdict: null,
    decided_by: null,
    reason: null,
    outcome: null,
    duration_ms: null,
    governance_gap: false,
  };
}

/** Everything recorded of one tool call. */
interface CallParts {
  key: string;
  id: string | null;
  ts: number;
  turn: string;
  events: StoryEvent[];
  audits: StoryInvocation[];
  records: StoryRecord[];
}

function callParts(rows: StoryRows): CallParts[] {
  const calls = new Map<string, CallParts>();
  const part = (key: string, id: string | null, ts: number, turn: string) => {
    const c = calls.get(key) ?? { key, id, ts, turn, events: [], audits: [], records: [] };
    calls.set(key, c);
    c.ts = Math.min(c.ts, ts);
    if (c.turn === "") c.turn = turn;
    return c;
  };
  const TOOL_EVENTS = new Set([
    "tool_exec_started",
    "tool_exec_ended",
    "tool_approval_requested",
    "approval_transition",
  ]);
  for (const e of rows.events)
    if (TOOL_EVENTS.has(e.event) && e.tool_call_id !== "" && e.payload["subject"] === undefined)
      part(e.tool_call_id, e.tool_call_id, e.ts, e.turn_id).events.push(e);
  for (const i of rows.invocations)
    if (["PreToolUse", "PermissionRequest", "PostToolUse"].includes(i.name)) {
      const key = i.tool_call_id || `i:${i.turn_id}:${i.step_id}:${i.name === "PreToolUse" ? i.seq : ""}`;
      part(key, i.tool_call_id || null, i.ts, i.turn_id).audits.push(i);
    }
  for (const r of rows.records)
    if (r.kind === "tool.called" || r.kind === "tool.completed" || r.kind === "governance.gap")
      part(r.tool_call_id || `r:${r.record_id}`, r.tool_call_id || null, r.ts, r.turn_id).records.push(r);
  return [...calls.values()];
}

type Verdict = Pick<ConsoleStoryStep, "verdict" | "decided_by"> & { audit?: StoryInvocation };

/** Whether the call ran: its end was recorded, or a completion that says it executed. */
const ran = (c: CallParts) =>
  c.events.some((e) => e.event === "tool_exec_ended") ||
  c.records.some((r) => r.kind === "tool.completed" && r.payload["executed"] === true);

/**
 * Who stopped or let through a call, from its audits, approvals and records (first match wins),
 * and the deciding handler's audit when a handler decided.
 */
function callVerdict(c: CallParts): Verdict {
  const block = c.audits.find((a) => a.status === "block" && a.name !== "PermissionRequest");
  if (block) return { verdict: "blocked", decided_by: block.extension, audit: block };
  const answers = c.events.filter((e) => e.event === "approval_transition");
  const answered =
    answers.find((e) => e.payload["decision"] === "deny") ??
    answers.find((e) => e.payload["decision"] === "allow");
  const handlerDeny = c.audits.find((a) => a.name === "PermissionRequest" && a.status === "deny");
  if (handlerDeny) return { verdict: "denied", decided_by: handlerDeny.extension, audit: handlerDeny };
  if (answered) {
    const by = str(answered.payload["approver"]) ?? str(answered.payload["source"]) ?? "nobody";
    return { verdict: answered.payload["decision"] === "allow" ? "approved" : "denied", decided_by: by };
  }
  if (answers.some((e) => e.payload["decision"] === "none"))
    // Nobody on the plane answered: the agent's own rules decided (Copilot and Claude Code ask or
    // allow by themselves), so a call that then ran was allowed by the agent.
    return ran(c)
      ? { verdict: "allowed", decided_by: "the agent (nobody answered)" }
      : { verdict: "denied", decided_by: "nobody answered" };
  const completed = c.records.find((r) => r.kind === "tool.completed");
  if (completed?.payload["status"] === "denied") return { verdict: "denied", decided_by: "policy" };
  if (completed?.payload["status"] === "blocked") return { verdict: "blocked", decided_by: null };
  return { verdict: "allowed", decided_by: null };
}

/**
 * The upstream of an MCP call: the `mcp` its records carry (a tool the mcp-bridge registered, as
 * the tool-executor records it), else the server and tool an agent's MCP tool name spells.
 */
function mcpOf(c: CallParts, named: string | null, owner: ToolOwner): ConsoleStoryStep["mcp"] {
  for (const r of c.records) {
    const m = r.payload["mcp"] as { server?: unknown; tool?: unknown } | null | undefined;
    const server = str(m?.server);
    const tool = str(m?.tool);
    if (server !== null && tool !== null && MCP_SERVER_NAME_PATTERN.test(server))
      return { server, tool: [...tool].slice(0, MCP_TOOL_CHARS).join("") };
  }
  if (named === null || toolKindOf(owner, named).kind !== "mcp") return null;
  const agent = agentMcpTool(named);
  return agent ? { server: agent.server, tool: [...agent.tool].slice(0, MCP_TOOL_CHARS).join("") } : null;
}

function toolCallStep(c: CallParts, owner: ToolOwner): ConsoleStoryStep {
  const s = step("tool_call", c.ts, c.turn);
  s.tool_call_id = c.id;
  const named = [...c.records, ...c.events].map((x) => str(x.payload["tool_name"])).find((n) => n !== null);
  s.tool_name = named ?? null;
  s.mcp = mcpOf(c, s.tool_name, owner);
  s.tool_kind = s.mcp ? "mcp" : named ? toolKindOf(owner, named).kind : null;
  s.target = cut(
    c.records.map((r) => str(r.payload["target"])).find((t) => t !== null) ?? null,
    TOOL_TARGET_CHARS,
  );
  s.governance_gap = c.records.some((r) => r.kind === "governance.gap");
  const { audit, ...verdict } = callVerdict(c);
  Object.assign(s, verdict);
  const ended = c.events.find((e) => e.event === "tool_exec_ended");
  const completed = c.records.find((r) => r.kind === "tool.completed");
  s.outcome =
    completed?.payload["executed"] === false
      ? "not run"
      : (str(completed?.payload["status"]) ?? str(ended?.payload["outcome"]));
  const refusal = c.records.find((r) => r.kind === "tool.completed" && str(r.payload["reason"]) !== null);
  if (s.verdict === "blocked" || s.verdict === "denied")
    s.reason = cut(str(refusal?.payload["reason"]) ?? audit?.reason ?? null);
  if (s.outcome === null && (s.verdict === "blocked" || s.verdict === "denied")) s.outcome = "not run";
  const called = c.records.find((r) => r.kind === "tool.called");
  s.duration_ms =
    num(ended?.payload["duration_ms"]) ??
    (called && completed ? Math.max(0, completed.ts - called.ts) : null);
  return s;
}

/** Prompts: each `user_input_received` (its length), and UserPromptSubmit audits of turns without one. */
function promptSteps(rows: StoryRows): ConsoleStoryStep[] {
  const audits = rows.invocations.filter((i) => i.name === "UserPromptSubmit");
  const steps: ConsoleStoryStep[] = [];
  const turns = new Set<string>();
  const decide = (s: ConsoleStoryStep, mine: StoryInvocation[]) => {
    const block = mine.find((a) => a.status === "block");
    s.verdict = block ? "blocked" : "allowed";
    s.decided_by = block?.extension ?? null;
    s.reason = cut(block?.reason ?? null);
    s.duration_ms = mine.length ? mine.reduce((t, a) => t + a.latency_ms, 0) : null;
  };
  for (const e of rows.events.filter((x) => x.event === "user_input_received")) {
    const s = step("prompt", e.ts, e.turn_id);
    s.length = num(e.payload["chars"]) ?? num(e.payload["length"]);
    decide(s, e.turn_id === "" ? [] : audits.filter((a) => a.turn_id === e.turn_id));
    if (e.turn_id !== "") turns.add(e.turn_id);
    steps.push(s);
  }
  const rest = new Map<string, StoryInvocation[]>();
  for (const a of audits) {
    if (turns.has(a.turn_id)) continue;
    const key = a.turn_id || `seq:${a.seq}`;
    rest.set(key, [...(rest.get(key) ?? []), a]);
  }
  for (const mine of rest.values()) {
    const s = step("prompt", mine[0]!.ts, mine[0]!.turn_id);
    decide(s, mine);
    steps.push(s);
  }
  return steps;
}

function otherSteps(rows: StoryRows): ConsoleStoryStep[] {
  const steps: ConsoleStoryStep[] = [];
  for (const r of rows.records) {
    if (r.kind === "verification.decided") {
      const s = step("verification", r.ts, str(r.payload["root_turn"]) ?? r.turn_id);
      const action = str(r.payload["policy_action"]);
      const decisions = Array.isArray(r.payload["decisions"])
        ? (r.payload["decisions"] as Array<Record<string, unknown>>)
        : [];
      const decider = decisions.find((d) => d["action"] === action) ?? decisions.at(-1);
      s.verdict = action;
      s.decided_by = str(decider?.["handler"]);
      s.outcome = r.payload["passed"] === true ? "passed" : r.payload["passed"] === false ? "failed" : null;
      steps.push(s);
    } else if (r.kind === "subagent.started" || r.kind === "subagent.stopped") {
      const s = step("subagent", r.ts, r.turn_id);
      s.tool_name = str(r.payload["task_type"]);
      s.verdict =
        r.kind === "subagent.started" ? "started" : r.payload["success"] === false ? "failed" : "completed";
      s.duration_ms = num(r.payload["duration_ms"]);
      steps.push(s);
    }
  }
  const compactions = new Map<string, StoryInvocation[]>();
  for (const i of rows.invocations)
    if (i.name === "PreCompact" || i.name === "PostCompact") {
      const key = `${i.turn_id}:${i.step_id}`;
      compactions.set(key, [...(compactions.get(key) ?? []), i]);
    }
  for (const mine of compactions.values()) {
    const s = step("compaction", mine[0]!.ts, mine[0]!.turn_id);
    const deferred = mine.find((a) => a.status === "block");
    s.verdict = mine.some((a) => a.name === "PostCompact")
      ? "compacted"
      : deferred
        ? "deferred"
        : "requested";
    s.decided_by = deferred?.extension ?? null;
    steps.push(s);
  }
  return steps;
}

const LLM_EVENTS = new Set(["llm_call_started", "llm_call_ended", "llm_call_failed", "cost_limit_exceeded"]);
/** A model or provider name as the story shows it. */
const LLM_NAME_CHARS = 200;
const whole = (v: unknown): number | null => {
  const n = num(v);
  return n === null || n < 0 ? null : Math.round(n);
};

/**
 * Model calls through the LLM gateway: one step per call id (its start, then its end or failure),
 * and one per call a budget refused (its `cost_limit_exceeded` events, one per spent budget).
 * Tokens, cost and status only: the events carry no prompt or completion text.
 */
function llmSteps(rows: StoryRows): ConsoleStoryStep[] {
  const calls = new Map<string, StoryEvent[]>();
  for (const e of rows.events)
    if (LLM_EVENTS.has(e.event)) {
      const key = e.llm_call_id || `e:${e.seq}`;
      calls.set(key, [...(calls.get(key) ?? []), e]);
    }
  const steps: ConsoleStoryStep[] = [];
  for (const mine of calls.values()) {
    const first = mine[0]!;
    const end = mine.find((e) => e.event === "llm_call_ended" || e.event === "llm_call_failed");
    const refusals = mine.filter((e) => e.event === "cost_limit_exceeded");
    const p = end?.payload ?? first.payload;
    const s = step("llm_call", first.ts, first.turn_id);
    s.llm = {
      provider: cut(str(p["provider"]), LLM_NAME_CHARS),
      model: cut(str(p["model"]), LLM_NAME_CHARS),
      input_tokens: whole(end?.payload["input_tokens"]),
      cached_input_tokens: whole(end?.payload["cached_input_tokens"]),
      output_tokens: whole(end?.payload["output_tokens"]),
      cost_usd: end ? (num(end.payload["cost_usd"]) ?? 0) : null,
      status: refusals.length > 0 && !end ? 429 : whole(end?.payload["status"]),
      stream: typeof p["stream"] === "boolean" ? p["stream"] : null,
      budget: cut(str(refusals[0]?.payload["budget"]), LLM_NAME_CHARS),
    };
    if (refusals.length > 0 && !end) {
      s.verdict = "refused";
      s.decided_by = s.llm.budget;
      const r = refusals[0]!.payload;
      s.reason = cut(
        [str(r["reason"]), str(r["window"]) === null ? null : `window ${str(r["window"])}`]
          .filter((x) => x !== null)
          .join(", ") || null,
      );
      s.outcome = "not run";
    } else {
      s.verdict = "allowed";
      s.outcome = end ? (end.event === "llm_call_ended" ? "ended" : "failed") : "running";
      if (end?.event === "llm_call_failed") s.reason = cut(str(end.payload["error"]));
      s.duration_ms = num(end?.payload["duration_ms"]);
    }
    steps.push(s);
  }
  return steps;
}

/** The session's steps in time order, each timed from the session's start. */
export function storySteps(
  rows: StoryRows,
  session: Pick<ConsoleSessionSummary, "agent_kind" | "started_at">,
): ConsoleStoryStep[] {
  const owner = session.agent_kind as ToolOwner;
  const steps = [
    ...promptSteps(rows),
    ...callParts(rows).map((c) => toolCallStep(c, owner)),
    ...otherSteps(rows),
    ...llmSteps(rows),
  ];
  for (const s of steps) s.at_ms = Math.max(0, s.ts - session.started_at);
  return steps.sort((a, b) => a.ts - b.ts);
}

/** An `extension_invoked` event's reason, keyed to its audit row. */
interface AuditReason {
  seq: number | string;
  name: string;
  extension: string;
  reason: string | null;
}

/** Reads the session's rows of the three tables (and the audits' reasons), oldest first. */
async function storyRows(p: ConsoleProjection, sessionId: string): Promise<StoryRows> {
  const t = tables(p.ns);
  const [events, invocations, records, reasons] = await Promise.all([
    sql<StoryEvent>`
      select stream_seq as seq, event, ts, turn_id, tool_call_id, llm_call_id, run_id, payload from ${t.activity}
      where session_id = ${sessionId} and event <> 'extension_invoked' order by ts, stream_seq limit ${MAX_ROWS}`.execute(
      p.db,
    ),
    sql<Omit<StoryInvocation, "reason">>`
      select stream_seq as seq, ts, name, extension, status, latency_ms, turn_id, tool_call_id, step_id, run_id
      from ${t.invocations} where session_id = ${sessionId} and surface = 'hook' order by ts, stream_seq limit ${MAX_ROWS}`.execute(
      p.db,
    ),
    sql<StoryRecord>`
      select stream_seq as seq, kind, ts, turn_id, tool_call_id, run_id, record_id, payload from ${t.timeline}
      where session_id = ${sessionId} order by ts, stream_seq limit ${MAX_ROWS}`.execute(p.db),
    sql<AuditReason>`
      select stream_seq as seq, payload->>'name' as name, payload->>'extension' as extension,
             payload->>'reason' as reason
      from ${t.activity} where session_id = ${sessionId} and event = 'extension_invoked'
        and payload->>'surface' = 'hook' and payload ? 'reason'
      order by ts, stream_seq limit ${MAX_ROWS}`.execute(p.db),
  ]);
  // An audit row and its extension_invoked event come from one stream message: one sequence.
  const why = new Map(reasons.rows.map((r) => [`${Number(r.seq)}:${r.name}:${r.extension}`, r.reason]));
  const n = <T extends { seq: unknown; ts: unknown }>(r: T): T => ({
    ...r,
    seq: Number(r.seq),
    ts: Number(r.ts),
  });
  return {
    events: events.rows.map(n),
    invocations: invocations.rows.map((r) => ({
      ...n(r),
      latency_ms: Number(r.latency_ms),
      reason: str(why.get(`${Number(r.seq)}:${r.name}:${r.extension}`)),
    })),
    records: records.rows.map(n),
  };
}

/** `GET /api/sessions/{session_id}/story`, or null for a session the projection does not know. */
export async function sessionStory(
  p: ConsoleProjection,
  sessionId: string,
  paused: (sessionId: string) => Promise<boolean>,
): Promise<ConsoleSessionStory | null> {
  const summary = await sessionSummary(p, sessionId);
  if (!summary) return null;
  if (summary.status === "active" && (await paused(sessionId))) summary.status = "paused";
  const rows = await storyRows(p, sessionId);
  const runIds = new Set<string>();
  for (const r of [...rows.events, ...rows.invocations, ...rows.records])
    if (r.run_id !== "") runIds.add(r.run_id);
  return { session: { ...summary, run_ids: [...runIds].sort() }, steps: storySteps(rows, summary) };
}
