import type { ConsoleSessionSummary, ConsoleSessionsPage, ConsoleSessionsQuery } from "@geode/contracts";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { badRequest } from "./http-io.js";

/** The projection the console reads: a Kysely handle and the namespace whose schema holds the tables. */
export interface ConsoleProjection {
  // biome-ignore lint/suspicious/noExplicitAny: the console reads the projection through raw SQL only.
  db: Kysely<any>;
  ns: string;
}

/** Where a page of sessions goes on: after this session in (started_at desc, session_id desc) order. */
interface SessionCursor {
  started_at: number;
  session_id: string;
}

function sessionCursor(c: SessionCursor): string {
  return Buffer.from(JSON.stringify([c.started_at, c.session_id]), "utf8").toString("base64url");
}

function parseSessionCursor(token: string): SessionCursor {
  try {
    const [startedAt, sessionId] = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as unknown[];
    if (Number.isSafeInteger(startedAt) && typeof sessionId === "string")
      return { started_at: startedAt as number, session_id: sessionId };
  } catch {}
  throw badRequest("cursor must be the next cursor of a previous page", { cursor: token.slice(0, 32) });
}

/** The tables of the namespace's schema (raw SQL is not rewritten by `withSchema`). */
export function tables(ns: string) {
  return {
    activity: sql.id(ns, "activity_events"),
    invocations: sql.id(ns, "extension_invocations"),
    timeline: sql.id(ns, "session_events"),
  };
}

/**
 * One row per session of the projection with its counts: the sessions are the ids its records
 * name; agent and kind come from the latest `session_started`; a session is ended once a
 * `session_ended` follows its last start. Counted per session: prompts (`user_input_received` and
 * UserPromptSubmit audits, one per turn),
 * tool calls (every call the agent attempted, run or refused: distinct call ids of the calls'
 * records and PreToolUse audits; agents that name no call get an id at PreToolUse), blocks (audited
 * `block` decisions, one per call or prompt), approvals, and denials (one per call: a person's or a
 * handler's answer to a permission request, or a refusal recorded as `denied`, e.g. by the
 * executor's tool policy), and governance gaps (results whose PreToolUse never reached the plane).
 */
function sessionRows(ns: string): RawBuilder<unknown> {
  const t = tables(ns);
  return sql`
    with ${lifecycleParts(t)},
    ${countParts(t)}
    select seen.session_id,
           started.agent,
           coalesce(started.agent_kind, 'runtime') as agent_kind,
           coalesce(started.started_at, seen.first_ts) as started_at,
           case when ended.ended_at >= coalesce(started.last_start, 0) then ended.ended_at end as ended_at,
           case when ended.ended_at >= coalesce(started.last_start, 0)
                then coalesce(ended.status, 'completed') else 'active' end as status,
           coalesce(prompts.n, 0) as prompts,
           coalesce(calls.n, 0) as tool_calls,
           coalesce(blocks.n, 0) as blocked,
           coalesce(permits.approved, 0) as approved,
           coalesce(denials.n, 0) as denied,
           verified.action as verification,
           coalesce(gaps.n, 0) as gaps
    from seen
    left join started on started.session_id = seen.session_id
    left join ended on ended.session_id = seen.session_id
    left join prompts on prompts.session_id = seen.session_id
    left join calls on calls.session_id = seen.session_id
    left join blocks on blocks.session_id = seen.session_id
    left join permits on permits.session_id = seen.session_id
    left join denials on denials.session_id = seen.session_id
    left join verified on verified.session_id = seen.session_id
    left join gaps on gaps.session_id = seen.session_id
  `;
}

/** The sessions the records name (`seen`), their latest start (`started`) and end (`ended`). */
function lifecycleParts(t: ReturnType<typeof tables>): RawBuilder<unknown> {
  return sql`
    ids as (
      select session_id, min(ts) as first_ts from ${t.activity} where session_id <> '' group by session_id
      union all
      select session_id, min(ts) from ${t.timeline} where session_id <> '' group by session_id
    ),
    seen as (select session_id, min(first_ts) as first_ts from ids group by session_id),
    started as (
      select session_id, min(ts) as started_at, max(ts) as last_start,
             (array_agg(payload->>'agent' order by ts desc))[1] as agent,
             (array_agg(payload->>'agent_kind' order by ts desc))[1] as agent_kind
      from ${t.activity} where event = 'session_started' group by session_id
    ),
    ended as (
      select session_id, max(ts) as ended_at, (array_agg(payload->>'status' order by ts desc))[1] as status
      from ${t.activity} where event = 'session_ended' group by session_id
    )
  `;
}

/** Per session: prompts, tool calls, blocks, approvals, denials, governance gaps, the verification. */
function countParts(t: ReturnType<typeof tables>): RawBuilder<unknown> {
  return sql`
    prompts as (
      select session_id, count(distinct k) as n from (
        select session_id, coalesce(nullif(turn_id, ''), 'e:' || stream_seq) as k
        from ${t.activity} where event = 'user_input_received'
        union all
        select session_id, coalesce(nullif(turn_id, ''), 'i:' || stream_seq)
        from ${t.invocations} where surface = 'hook' and name = 'UserPromptSubmit'
      ) p group by session_id
    ),
    calls as (
      select session_id, count(distinct k) as n from (
        select session_id, coalesce(nullif(tool_call_id, ''), 'r:' || record_id) as k
        from ${t.timeline} where kind = 'tool.called'
        union all
        select session_id, tool_call_id from ${t.timeline}
        where kind = 'tool.completed' and tool_call_id <> ''
        union all
        select session_id, tool_call_id from ${t.invocations}
        where surface = 'hook' and name = 'PreToolUse' and tool_call_id <> ''
      ) c group by session_id
    ),
    blocks as (
      select session_id, count(distinct case when tool_call_id <> '' then 'c:' || tool_call_id
                                   else name || ':' || coalesce(nullif(turn_id, ''), stream_seq::text) end) as n
      from ${t.invocations}
      where surface = 'hook' and status = 'block' and name in ('PreToolUse', 'UserPromptSubmit', 'PostToolUse')
      group by session_id
    ),
    permits as (
      select session_id, count(*) filter (where payload->>'decision' = 'allow') as approved
      from ${t.activity} where event = 'approval_transition' and payload->>'subject' is null
      group by session_id
    ),
    denials as (
      select session_id, count(distinct k) as n from (
        select session_id, coalesce(nullif(tool_call_id, ''), 'a:' || stream_seq) as k
        from ${t.activity}
        where event = 'approval_transition' and payload->>'subject' is null and payload->>'decision' = 'deny'
        union all
        select session_id, coalesce(nullif(tool_call_id, ''), 'i:' || stream_seq) from ${t.invocations}
        where surface = 'hook' and name = 'PermissionRequest' and status = 'deny'
        union all
        select session_id, coalesce(nullif(tool_call_id, ''), 'r:' || record_id) from ${t.timeline}
        where kind = 'tool.completed' and payload->>'status' = 'denied'
      ) d group by session_id
    ),
    gaps as (
      select session_id, count(distinct coalesce(nullif(tool_call_id, ''), record_id)) as n
      from ${t.timeline} where kind = 'governance.gap' group by session_id
    ),
    verified as (
      select session_id, (array_agg(payload->>'policy_action' order by ts desc))[1] as action
      from ${t.timeline} where kind = 'verification.decided' group by session_id
    )
  `;
}

interface SessionRow {
  session_id: string;
  agent: string | null;
  agent_kind: string;
  started_at: string | number;
  ended_at: string | number | null;
  status: string;
  prompts: string | number;
  tool_calls: string | number;
  blocked: string | number;
  approved: string | number;
  denied: string | number;
  verification: string | null;
  gaps: string | number;
}

function summaryOf(r: SessionRow): ConsoleSessionSummary {
  return {
    session_id: r.session_id,
    agent: r.agent,
    agent_kind: r.agent_kind as ConsoleSessionSummary["agent_kind"],
    started_at: Number(r.started_at),
    ended_at: r.ended_at === null ? null : Number(r.ended_at),
    status: r.status === "error" ? "error" : r.status === "active" ? "active" : "completed",
    prompts: Number(r.prompts),
    tool_calls: Number(r.tool_calls),
    blocked: Number(r.blocked),
    approved: Number(r.approved),
    denied: Number(r.denied),
    verification: r.verification,
    gaps: Number(r.gaps),
  };
}

/** The filters of `GET /api/sessions` as SQL conditions over `sessionRows`. */
function conditions(q: ConsoleSessionsQuery, cursor: SessionCursor | null): RawBuilder<unknown>[] {
  const where: RawBuilder<unknown>[] = [];
  if (q.agent !== undefined) where.push(sql`s.agent = ${q.agent}`);
  if (q.agent_kind !== undefined) where.push(sql`s.agent_kind = ${q.agent_kind}`);
  if (q.status !== undefined) where.push(sql`s.status = ${q.status}`);
  if (q.has_blocks !== undefined) where.push(q.has_blocks ? sql`s.blocked > 0` : sql`s.blocked = 0`);
  if (q.since !== undefined) where.push(sql`coalesce(s.ended_at, ${Date.now()}) >= ${q.since}`);
  if (q.until !== undefined) where.push(sql`s.started_at <= ${q.until}`);
  if (q.q !== undefined) where.push(sql`strpos(s.session_id, ${q.q}) > 0`);
  if (cursor)
    where.push(
      sql`(s.started_at < ${cursor.started_at} or (s.started_at = ${cursor.started_at} and s.session_id < ${cursor.session_id}))`,
    );
  return where;
}

/**
 * `GET /api/sessions`: the sessions of the projection, the most recently started first, filtered
 * as the query says; `next` goes on after the last item. A session the sessions bucket holds as
 * paused shows as paused (`pausedOf`).
 */
export async function listSessions(
  p: ConsoleProjection,
  q: ConsoleSessionsQuery,
  pausedOf: (sessionIds: string[]) => Promise<Set<string>>,
): Promise<ConsoleSessionsPage> {
  const limit = q.limit ?? 50;
  const cursor = q.cursor === undefined ? null : parseSessionCursor(q.cursor);
  const where = conditions(q, cursor);
  const filter = where.length === 0 ? sql`` : sql`where ${sql.join(where, sql` and `)}`;
  const { rows } = await sql<SessionRow>`
    select * from (${sessionRows(p.ns)}) s ${filter}
    order by s.started_at desc, s.session_id desc
    limit ${limit + 1}
  `.execute(p.db);
  const items = rows.slice(0, limit).map(summaryOf);
  const paused = await pausedOf(items.filter((s) => s.status === "active").map((s) => s.session_id));
  for (const s of items) if (paused.has(s.session_id)) s.status = "paused";
  const last = items.at(-1);
  return { items, next: rows.length > limit && last ? sessionCursor(last) : null };
}

/** One session's summary, or null when the projection has no record of it. */
export async function sessionSummary(
  p: ConsoleProjection,
  sessionId: string,
): Promise<ConsoleSessionSummary | null> {
  const { rows } = await sql<SessionRow>`
    select * from (${sessionRows(p.ns)}) s where s.session_id = ${sessionId}
  `.execute(p.db);
  return rows[0] ? summaryOf(rows[0]) : null;
}
