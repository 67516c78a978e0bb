import {
  type ConsolePolicyBlock,
  type ConsolePolicyDecisions,
  type ConsolePolicySet,
  HookNameSchema,
  type PolicyOutcome,
  SessionAgentKindSchema,
  STATS_WINDOWS,
} from "@geode/contracts";
import { type PolicySetInForce, parsePolicyReason } from "@geode/policy";
import { sql } from "kysely";
import { type ConsoleProjection, tables } from "./session-list.js";

/** The handler the policy-guard answers as: its audits are the guard's decisions. */
const GUARD = "policy";
/** Buckets of the decisions chart: a minute each over the hour. */
const BUCKETS = 60;
/** Latest blocks shown. */
const LATEST_BLOCKS = 20;

type PoliciesWindow = keyof typeof STATS_WINDOWS;

/** A set in force as the view shows it: without its text, with its policies' ids and a refused newer value. */
export function policySetView(s: PolicySetInForce & { enforced: object }): ConsolePolicySet {
  const { record, set, revision } = s.enforced;
  const { name, mode, sha256, created_at, updated_by } = record;
  const policies = set.policies.map((p) => p.id);
  return { name, mode, sha256, created_at, updated_by, policies, revision, refused: s.refused };
}

/**
 * What a guard's audit counts as: the enforced block or deny, an enforced ask (audited `ok` with
 * its deciding policies as the note), an audit-mode note, or nothing.
 */
function outcomeOf(
  status: string,
  mode: "enforce" | "audit",
  policies: readonly string[],
): PolicyOutcome | null {
  if (mode === "audit") return status === "ok" ? "audit" : null;
  if (status === "ok") return policies.length > 0 ? "ask" : null;
  return status === "block" || status === "deny" ? status : null;
}

interface DecisionRow {
  bucket: string | number;
  status: string;
  reason: string;
  n: string | number;
}

/**
 * The guard's decisions over `window` per deciding policy and outcome, in equal buckets: its audits
 * (`extension_invoked` of the handler `policy`) that carry a reason, the ids read from that reason.
 */
export async function policyDecisions(
  p: ConsoleProjection,
  window: PoliciesWindow,
  now = Date.now(),
): Promise<ConsolePolicyDecisions> {
  const windowMs = STATS_WINDOWS[window];
  const bucketMs = windowMs / BUCKETS;
  const from = now - windowMs;
  const t = tables(p.ns);
  const { rows } = await sql<DecisionRow>`
    select least(${BUCKETS - 1}, floor((ts - ${from}) / ${bucketMs}))::int as bucket,
           payload->>'status' as status, payload->>'reason' as reason, count(*) as n
    from ${t.activity}
    where event = 'extension_invoked' and ts >= ${from} and ts <= ${now}
      and payload->>'extension' = ${GUARD} and payload ? 'reason'
    group by 1, 2, 3`.execute(p.db);
  const series = new Map<string, { policy: string; outcome: PolicyOutcome; counts: number[] }>();
  for (const r of rows) {
    const parsed = parsePolicyReason(r.reason);
    const outcome = outcomeOf(r.status, parsed.mode, parsed.policies);
    if (outcome === null) continue;
    for (const policy of parsed.policies) {
      const key = `${policy}\u0000${outcome}`;
      const s = series.get(key) ?? { policy, outcome, counts: new Array<number>(BUCKETS).fill(0) };
      series.set(key, s);
      s.counts[Number(r.bucket)]! += Number(r.n);
    }
  }
  return {
    window,
    window_ms: windowMs,
    bucket_ms: bucketMs,
    buckets: Array.from({ length: BUCKETS }, (_, i) => from + i * bucketMs),
    series: [...series.values()].sort(
      (a, b) => a.policy.localeCompare(b.policy) || a.outcome.localeCompare(b.outcome),
    ),
  };
}

interface BlockRow {
  ts: string | number;
  session_id: string;
  turn_id: string;
  tool_call_id: string;
  hook: string;
  status: string;
  reason: string | null;
  agent: string | null;
  agent_kind: string | null;
  tool_name: string | null;
}

/** One audit as a block of the list, or null when it stopped nothing (an audited ask, an allow). */
function blockOf(r: BlockRow): ConsolePolicyBlock | null {
  const hook = HookNameSchema.safeParse(r.hook);
  if (!hook.success) return null;
  const parsed = parsePolicyReason(r.reason ?? "");
  const action = parsed.mode === "audit" ? parsed.would : r.status;
  if (action !== "block" && action !== "deny") return null;
  if (parsed.mode === "audit" && r.status !== "ok") return null;
  const kind = SessionAgentKindSchema.safeParse(r.agent_kind ?? "runtime");
  return {
    ts: Number(r.ts),
    session_id: r.session_id,
    turn_id: r.turn_id,
    tool_call_id: r.tool_call_id === "" ? null : r.tool_call_id,
    agent: r.agent,
    agent_kind: kind.success ? kind.data : "runtime",
    hook: hook.data,
    tool_name: r.tool_name,
    action,
    mode: parsed.mode,
    policies: parsed.policies,
    reason: parsed.reason,
  };
}

/**
 * The latest calls and prompts the guard stopped, or in audit mode would have stopped, newest
 * first, with the session's agent (its latest `session_started`) and the tool a record names.
 */
export async function latestPolicyBlocks(p: ConsoleProjection): Promise<ConsolePolicyBlock[]> {
  const t = tables(p.ns);
  const { rows } = await sql<BlockRow>`
    select a.ts, a.session_id, a.turn_id, a.tool_call_id, a.payload->>'name' as hook,
           a.payload->>'status' as status, a.payload->>'reason' as reason, s.agent, s.agent_kind,
           (select x.payload->>'tool_name' from (
              select session_id, tool_call_id, payload from ${t.timeline}
              union all select session_id, tool_call_id, payload from ${t.activity}
            ) x
             where a.tool_call_id <> '' and x.session_id = a.session_id and x.tool_call_id = a.tool_call_id
               and x.payload ? 'tool_name' limit 1) as tool_name
    from ${t.activity} a
    left join lateral (
      select payload->>'agent' as agent, payload->>'agent_kind' as agent_kind from ${t.activity}
      where event = 'session_started' and session_id = a.session_id and a.session_id <> ''
      order by ts desc limit 1
    ) s on true
    where a.event = 'extension_invoked' and a.payload->>'extension' = ${GUARD}
      and (a.payload->>'status' in ('block', 'deny') or (a.payload->>'status' = 'ok' and a.payload ? 'reason'))
    order by a.ts desc, a.stream_seq desc
    limit ${LATEST_BLOCKS * 10}`.execute(p.db);
  const blocks: ConsolePolicyBlock[] = [];
  for (const r of rows) {
    const b = blockOf(r);
    if (b) blocks.push(b);
    if (blocks.length === LATEST_BLOCKS) break;
  }
  return blocks;
}
