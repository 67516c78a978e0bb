import { AGENT_CHECK_EVENT } from "@geode/contracts";
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { ProjectionDatabase } from "./projection-schema.js";

/** What the projection knows of one gateway agent's work. */
export interface AgentActivity {
  /** The agent's name (its token's, as its sessions recorded it). */
  agent: string;
  /** The agent kinds its sessions were (`claude-code`, `codex`, …), sorted. */
  kinds: string[];
  sessions: number;
  /** The latest record of any of its sessions, epoch ms. */
  last_seen: number;
  /** Hook handler calls audited in its sessions. */
  hook_calls: number;
  /** Of those, the ones that blocked or denied. */
  blocks: number;
  /** Its last `geode connect <kind> --check` that reached the gateway, or null. */
  last_check: AgentCheck | null;
  /** The guarded hooks (PreToolUse, PermissionRequest) the gateway has seen it send, sorted. */
  guarded_hooks: string[];
}

/** One `geode connect --check` as the gateway recorded it. */
export interface AgentCheck {
  at: number;
  agent_kind: string;
  ok: boolean;
  /** The check's line (bounded, secrets masked by the gateway). */
  detail: string;
}

/**
 * Per gateway agent (as each session's `session_started` names it): its kinds, sessions, last
 * activity, audited hook calls and blocks, from the projection in `schema` (the namespace).
 * Sessions of a runtime name no agent and are left out.
 */
export async function agentActivity(
  db: Kysely<ProjectionDatabase>,
  schema: string,
): Promise<AgentActivity[]> {
  // Raw SQL is not rewritten by `withSchema`: the tables are named with their schema here.
  const activity = sql.id(schema, "activity_events");
  const invocations = sql.id(schema, "extension_invocations");
  const rows = await sql<{
    agent: string;
    kind: string | null;
    sessions: string | number;
    last_seen: string | number | null;
    hook_calls: string | number;
    blocks: string | number;
  }>`
    with s as (
      select distinct session_id, payload->>'agent' as agent, payload->>'agent_kind' as kind
      from ${activity}
      where event = 'session_started' and payload->>'agent' is not null
    ),
    calls as (
      select session_id, count(*) as calls,
             count(*) filter (where status in ('block', 'deny')) as blocks
      from ${invocations}
      where surface = 'hook' and session_id in (select session_id from s)
      group by session_id
    ),
    seen as (
      select session_id, max(ts) as last_ts
      from ${activity}
      where session_id in (select session_id from s)
      group by session_id
    )
    select s.agent, s.kind, count(distinct s.session_id) as sessions, max(seen.last_ts) as last_seen,
           coalesce(sum(calls.calls), 0) as hook_calls, coalesce(sum(calls.blocks), 0) as blocks
    from s
    left join calls on calls.session_id = s.session_id
    left join seen on seen.session_id = s.session_id
    group by s.agent, s.kind
  `.execute(db);
  const byAgent = new Map<string, AgentActivity>();
  const entry = (agent: string): AgentActivity => {
    const a = byAgent.get(agent) ?? {
      agent,
      kinds: [],
      sessions: 0,
      last_seen: 0,
      hook_calls: 0,
      blocks: 0,
      last_check: null,
      guarded_hooks: [],
    };
    byAgent.set(agent, a);
    return a;
  };
  for (const r of rows.rows) {
    const a = entry(r.agent);
    if (r.kind && !a.kinds.includes(r.kind)) a.kinds.push(r.kind);
    a.sessions += Number(r.sessions);
    a.last_seen = Math.max(a.last_seen, Number(r.last_seen ?? 0));
    a.hook_calls += Number(r.hook_calls);
    a.blocks += Number(r.blocks);
  }
  for (const c of await gatewayNotes(db, activity)) {
    const a = entry(c.agent);
    if (c.hook === AGENT_CHECK_EVENT && c.check !== null)
      a.last_check = { at: Number(c.at), agent_kind: c.kind, ok: c.check === "ok", detail: c.detail ?? "" };
    else if (c.guarded && !a.guarded_hooks.includes(c.hook)) a.guarded_hooks.push(c.hook);
  }
  for (const a of byAgent.values()) a.guarded_hooks.sort();
  for (const a of byAgent.values()) a.kinds.sort();
  return [...byAgent.values()].sort((x, y) => x.agent.localeCompare(y.agent));
}

/** The gateway agent a session belongs to, as its `session_started` names it. */
export interface SessionAgent {
  /** The agent's name (its token's); null for a runtime's session. */
  agent: string | null;
  /** `claude-code`, `codex`, …; null for a runtime's session. */
  agent_kind: string | null;
}

/** The agent and agent kind each of `sessions` recorded in its `session_started` (a runtime's names none). */
export async function sessionAgents(
  db: Kysely<ProjectionDatabase>,
  sessions: readonly string[],
): Promise<Map<string, SessionAgent>> {
  if (sessions.length === 0) return new Map();
  const rows = await db
    .selectFrom("activity_events")
    .select([
      "session_id",
      sql<string | null>`payload->>'agent'`.as("agent"),
      sql<string | null>`payload->>'agent_kind'`.as("kind"),
    ])
    .where("event", "=", "session_started")
    .where("session_id", "in", [...sessions])
    .execute();
  return new Map(
    rows.flatMap((r) =>
      r.agent || r.kind
        ? [[r.session_id, { agent: r.agent || null, agent_kind: r.kind || null }] as const]
        : [],
    ),
  );
}

interface GatewayNote {
  agent: string;
  kind: string;
  hook: string;
  at: string | number;
  check: string | null;
  detail: string | null;
  guarded: boolean;
}

/**
 * What the gateway noted of each agent besides its sessions (`adapter_dispatch_attempt` naming the
 * agent): its latest `--check`, and each guarded hook it was seen sending.
 */
async function gatewayNotes(
  db: Kysely<ProjectionDatabase>,
  activity: RawBuilder<unknown>,
): Promise<GatewayNote[]> {
  const { rows } = await sql<GatewayNote>`
    select distinct on (payload->>'agent', payload->>'hook_event_name')
           payload->>'agent' as agent, payload->>'adapter' as kind, payload->>'hook_event_name' as hook,
           ts as at, payload->>'check' as check, payload->>'detail' as detail,
           coalesce((payload->>'guarded')::boolean, false) as guarded
    from ${activity}
    where event = 'adapter_dispatch_attempt' and payload ? 'agent'
      and (payload->>'hook_event_name' = ${AGENT_CHECK_EVENT} or payload->>'guarded' = 'true')
    order by payload->>'agent', payload->>'hook_event_name', ts desc
  `.execute(db);
  return rows;
}
