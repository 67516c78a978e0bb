import {
  type BudgetRecord,
  budgetSpendKey,
  type ConsoleLlm,
  type ConsoleLlmBudget,
  type ConsoleLlmRefusal,
  type ConsoleLlmSeries,
  parseBudgetKey,
  windowEnd,
  windowStart,
} from "@geode/contracts";
import { AgentStore, BudgetSpendStore, BudgetStore } from "@geode/state";
import { sql } from "kysely";
import type { Route } from "./console-route.js";
import { ApiError, badRequest, sendJson } from "./http-io.js";
import { type ConsoleProjection, tables } from "./session-list.js";
import { fromProjection } from "./session-routes.js";

/** Spend is shown per hour over the last 24 hours. */
const BUCKET_MS = 3_600_000;
const BUCKETS = 24;
/** The sessions with the most spend shown, and the latest refusals. */
const MAX_SESSIONS = 20;
const MAX_REFUSALS = 100;
/** Names from the events are shown cut to this many characters. */
const NAME_CHARS = 200;

/** The session id the gateway gives an agent's calls that name none: `llm-{agent}-{base36 time}`. */
const LLM_SESSION = /^llm-([a-z0-9][a-z0-9_-]{0,63})-[0-9a-z]+$/;

const cut = (s: string) => [...s].slice(0, NAME_CHARS).join("");
const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? cut(v) : null);
const nonNeg = (v: unknown): number | null =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null;
const whole = (v: unknown): number | null => {
  const n = nonNeg(v);
  return n === null ? null : Math.round(n);
};

interface CallRow {
  session_id: string;
  bucket: string | number;
  usd: string | number | null;
  tokens: string | number | null;
  calls: string | number;
  failed: string | number;
}

interface RefusalRow {
  ts: string | number;
  session_id: string;
  payload: Record<string, unknown>;
}

interface Projected {
  calls: CallRow[];
  refusedCount: number;
  refusals: RefusalRow[];
  agentOf: Map<string, string>;
}

/** The window's model calls per session and hour, its refusals, and the agents of those sessions. */
async function readProjection(p: ConsoleProjection, since: number, until: number): Promise<Projected> {
  const t = tables(p.ns);
  const [calls, refusals, refusedCount] = await Promise.all([
    sql<CallRow>`
      select session_id, floor(ts / ${BUCKET_MS})::bigint as bucket,
             sum(case when jsonb_typeof(payload->'cost_usd') = 'number' then (payload->>'cost_usd')::float8 else 0 end) as usd,
             sum(case when jsonb_typeof(payload->'input_tokens') = 'number' then (payload->>'input_tokens')::float8 else 0 end
               + case when jsonb_typeof(payload->'output_tokens') = 'number' then (payload->>'output_tokens')::float8 else 0 end) as tokens,
             count(*) as calls, count(*) filter (where event = 'llm_call_failed') as failed
      from ${t.activity}
      where event in ('llm_call_ended', 'llm_call_failed') and ts >= ${since} and ts < ${until}
      group by 1, 2`.execute(p.db),
    sql<RefusalRow>`
      select ts, session_id, payload from ${t.activity}
      where event = 'cost_limit_exceeded' and ts >= ${since} and ts < ${until}
      order by ts desc, stream_seq desc limit ${MAX_REFUSALS}`.execute(p.db),
    sql<{ n: string | number }>`
      select count(*) as n from ${t.activity}
      where event = 'cost_limit_exceeded' and ts >= ${since} and ts < ${until}`.execute(p.db),
  ]);
  const ids = [...new Set([...calls.rows, ...refusals.rows].map((r) => r.session_id))].filter(
    (s) => s !== "",
  );
  const agentOf = new Map<string, string>();
  if (ids.length > 0) {
    // The session's own start names its agent; else the model-call events do (a session the
    // agent named in `x-geode-session` that no hook started).
    const { rows } = await sql<{ session_id: string; agent: string | null }>`
      select session_id,
             (array_agg(payload->>'agent' order by event = 'session_started' desc, ts desc))[1] as agent
      from ${t.activity}
      where event in ('session_started', 'llm_call_started', 'llm_call_ended', 'llm_call_failed', 'cost_limit_exceeded')
        and payload->>'agent' is not null and session_id in (${sql.join(ids)})
      group by session_id`.execute(p.db);
    for (const r of rows) if (r.agent) agentOf.set(r.session_id, r.agent);
  }
  for (const id of ids) {
    const m = LLM_SESSION.exec(id);
    if (!agentOf.has(id) && m?.[1]) agentOf.set(id, m[1]);
  }
  return {
    calls: calls.rows,
    refusals: refusals.rows,
    refusedCount: Number(refusedCount.rows[0]?.n ?? 0),
    agentOf,
  };
}

/** Sums calls into one series per key (a call may count toward several keys, e.g. groups). */
function seriesBy(
  calls: CallRow[],
  first: number,
  keysOf: (row: CallRow) => readonly string[],
): ConsoleLlmSeries[] {
  const out = new Map<string, ConsoleLlmSeries>();
  for (const row of calls) {
    const i = Number(row.bucket) - first;
    if (i < 0 || i >= BUCKETS) continue;
    for (const name of keysOf(row)) {
      const s = out.get(name) ?? {
        name: cut(name),
        usd: Array<number>(BUCKETS).fill(0),
        tokens: Array<number>(BUCKETS).fill(0),
        calls: Array<number>(BUCKETS).fill(0),
        total_usd: 0,
        total_tokens: 0,
        total_calls: 0,
      };
      out.set(name, s);
      const usd = Number(row.usd ?? 0);
      const tokens = Math.round(Number(row.tokens ?? 0));
      const n = Number(row.calls);
      s.usd[i] = round(s.usd[i]! + usd);
      s.tokens[i]! += tokens;
      s.calls[i]! += n;
      s.total_usd = round(s.total_usd + usd);
      s.total_tokens += tokens;
      s.total_calls += n;
    }
  }
  return [...out.values()].sort(
    (a, b) => b.total_usd - a.total_usd || b.total_tokens - a.total_tokens || (a.name < b.name ? -1 : 1),
  );
}

const round = (usd: number) => Math.round(usd * 1e9) / 1e9;

/** Each budget with what its current window has used. */
async function budgetViews(
  budgets: Array<{ key: string; budget: BudgetRecord }>,
  spend: BudgetSpendStore,
  now: number,
): Promise<ConsoleLlmBudget[]> {
  return Promise.all(
    budgets.map(async ({ key, budget }): Promise<ConsoleLlmBudget> => {
      const parsed = parseBudgetKey(key);
      const start = windowStart(budget.window, now);
      const used = await spend.get(budgetSpendKey(key, budget.window, start), start);
      const shares = [
        budget.limit_usd === undefined ? null : (used.usd / budget.limit_usd) * 100,
        budget.limit_tokens === undefined ? null : (used.tokens / budget.limit_tokens) * 100,
      ].filter((x): x is number => x !== null);
      const percent = shares.length === 0 ? null : Math.round(Math.max(...shares) * 100) / 100;
      return {
        key,
        scope: "error" in parsed ? "agent" : parsed.scope,
        name: "error" in parsed ? key : parsed.name,
        window: budget.window,
        limit_usd: budget.limit_usd ?? null,
        limit_tokens: budget.limit_tokens ?? null,
        soft_percent: budget.soft_percent,
        requests_per_minute: budget.requests_per_minute ?? null,
        window_start: start,
        window_end: windowEnd(budget.window, start) ?? null,
        used_usd: used.usd,
        used_tokens: used.tokens,
        used_calls: used.calls,
        percent,
        state:
          percent === null
            ? "ok"
            : percent >= 100
              ? "spent"
              : percent >= budget.soft_percent
                ? "warning"
                : "ok",
      };
    }),
  );
}

function refusalView(r: RefusalRow, agentOf: Map<string, string>): ConsoleLlmRefusal {
  const p = r.payload;
  return {
    ts: Number(r.ts),
    session_id: r.session_id,
    agent: agentOf.get(r.session_id) ?? null,
    provider: str(p["provider"]),
    model: str(p["model"]),
    budget: str(p["budget"]),
    window: str(p["window"]),
    reason: str(p["reason"]),
    used_usd: nonNeg(p["used_usd"]),
    used_tokens: whole(p["used_tokens"]),
    limit_usd: nonNeg(p["limit_usd"]),
    limit_tokens: whole(p["limit_tokens"]),
    retry_after_s: whole(p["retry_after_s"]),
  };
}

/** Reads a KV through `open`, or answers 503 naming the bucket. */
async function fromKv<T>(
  d: Parameters<Route["handle"]>[0],
  bucket: string,
  read: () => Promise<T>,
): Promise<T> {
  try {
    return await read();
  } catch (err) {
    d.log.warn({ err }, "LLM budgets unreadable");
    throw new ApiError(503, "unavailable", `the LLM budgets could not be read: KV ${bucket} is unreachable`);
  }
}

/**
 * `GET /api/llm`: spend over the last 24 hours per hour, per agent, group (its agents' calls, by
 * the groups the agents have now) and session; the budgets with their use; the refused calls.
 */
export const LLM_ROUTES: Route[] = [
  {
    method: "GET",
    pattern: /^\/api\/llm$/,
    async handle(d, r) {
      if (r.url.search !== "") throw badRequest("GET /api/llm takes no query parameters");
      const now = Date.now();
      const first = Math.floor(now / BUCKET_MS) - (BUCKETS - 1);
      const since = first * BUCKET_MS;
      const { buckets: names } = d.conn.names;
      const [agents, budgets, spend] = await fromKv(
        d,
        `${names.budgets}, ${names.llmSpend} or ${names.agents}`,
        () =>
          Promise.all([
            AgentStore.open(d.conn).then((s) =>
              s.list((key) => d.log.warn({ key }, "skipping malformed agent record")),
            ),
            BudgetStore.open(d.conn).then((s) =>
              s.list((key) => d.log.warn({ key }, "skipping malformed budget")),
            ),
            BudgetSpendStore.open(d.conn),
          ]),
      );
      const projected = await fromProjection(d, (p) => readProjection(p, since, now + 1));
      const groupsOf = new Map(agents.map((a) => [a.name, a.groups ?? []]));
      const agentOf = (row: CallRow) => projected.agentOf.get(row.session_id) ?? null;
      const calls = projected.calls;
      const body: ConsoleLlm = {
        window_ms: BUCKETS * BUCKET_MS,
        bucket_ms: BUCKET_MS,
        buckets: Array.from({ length: BUCKETS }, (_, i) => (first + i) * BUCKET_MS),
        totals: {
          usd: round(calls.reduce((t, c) => t + Number(c.usd ?? 0), 0)),
          tokens: calls.reduce((t, c) => t + Math.round(Number(c.tokens ?? 0)), 0),
          calls: calls.reduce((t, c) => t + Number(c.calls), 0),
          failed: calls.reduce((t, c) => t + Number(c.failed), 0),
          refused: projected.refusedCount,
        },
        agents: seriesBy(calls, first, (c) => [agentOf(c) ?? "unknown"]),
        groups: seriesBy(calls, first, (c) => groupsOf.get(agentOf(c) ?? "") ?? []),
        sessions: seriesBy(calls, first, (c) => (c.session_id === "" ? [] : [c.session_id])).slice(
          0,
          MAX_SESSIONS,
        ),
        budgets: await fromKv(d, names.llmSpend, () => budgetViews(budgets, spend, now)),
        refused: projected.refusals.map((x) => refusalView(x, projected.agentOf)),
      };
      sendJson(r.res, 200, body);
    },
  },
];
