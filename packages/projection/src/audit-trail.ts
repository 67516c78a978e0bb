import { type Kysely, sql } from "kysely";
import { type SessionAgent, sessionAgents } from "./agent-activity.js";
import type { ProjectionDatabase } from "./projection-schema.js";
import { normalizeRow } from "./queries.js";

/** What a person decided about a call a handler sent to them (its `approval_transition`). */
export interface AuditApproval {
  /** `allow` or `deny`; `none` when nobody answered in time. */
  decision: string;
  /** Who answered (`console`, an operator, an approver's name); null when nobody did. */
  approver: string | null;
}

/** One audited extension call, with why it decided, whose session it was and what a person said. */
export interface AuditEntry extends SessionAgent {
  stream_seq: number;
  ts: number;
  session_id: string;
  tool_call_id: string;
  surface: string;
  name: string;
  extension: string;
  status: string;
  latency_ms: number;
  /**
   * The handler's reason or audit note as the recorder stored it (cut to 512 characters and
   * sanitized when written); null when it gave none.
   */
  reason: string | null;
  /**
   * For a tool call a handler sent to a person: what they decided (on every audit row of that
   * call, since the decision is the call's); else null.
   */
  approval: AuditApproval | null;
}

/**
 * The latest `limit` rows of `extension_invocations` (of one session, when given), oldest of them
 * first. The reason comes from the same message's `activity_events` payload (one stream sequence
 * keys both rows; `extension_invocations` holds no free text), the agent from the session's
 * `session_started`, and a person's decision from the call's `approval_transition` (same session
 * and tool call; a handler's ask is audited `ok` with its reason, so the call is what tells).
 */
export async function auditTrail(
  db: Kysely<ProjectionDatabase>,
  options: { session?: string | undefined; limit: number },
): Promise<AuditEntry[]> {
  let query = db
    .selectFrom("extension_invocations as i")
    .leftJoin("activity_events as a", "a.stream_seq", "i.stream_seq")
    .select([
      "i.stream_seq",
      "i.ts",
      "i.session_id",
      "i.tool_call_id",
      "i.surface",
      "i.name",
      "i.extension",
      "i.status",
      "i.latency_ms",
      sql<string | null>`a.payload->>'reason'`.as("reason"),
    ])
    .orderBy("i.stream_seq", "desc")
    .limit(options.limit);
  if (options.session !== undefined) query = query.where("i.session_id", "=", options.session);
  const found = (await query.execute()).map(normalizeRow).reverse();
  const agents = await sessionAgents(db, [...new Set(found.map((r) => r.session_id))]);
  const approvals = await approvalsOf(
    db,
    found.filter((r) => r.tool_call_id !== ""),
  );
  return found.map((r) => ({
    ...r,
    reason: r.reason || null,
    agent: agents.get(r.session_id)?.agent ?? null,
    agent_kind: agents.get(r.session_id)?.agent_kind ?? null,
    approval: approvals.get(callKey(r.session_id, r.tool_call_id)) ?? null,
  }));
}

const callKey = (session: string, toolCall: string) => JSON.stringify([session, toolCall]);

/** The last `approval_transition` of each of the calls, by `callKey`. */
async function approvalsOf(
  db: Kysely<ProjectionDatabase>,
  calls: ReadonlyArray<{ session_id: string; tool_call_id: string }>,
): Promise<Map<string, AuditApproval>> {
  const out = new Map<string, AuditApproval>();
  if (calls.length === 0) return out;
  const rows = await db
    .selectFrom("activity_events")
    .select([
      "session_id",
      "tool_call_id",
      sql<string | null>`payload->>'decision'`.as("decision"),
      sql<string | null>`payload->>'approver'`.as("approver"),
    ])
    .where("event", "=", "approval_transition")
    .where("session_id", "in", [...new Set(calls.map((c) => c.session_id))])
    .where("tool_call_id", "in", [...new Set(calls.map((c) => c.tool_call_id))])
    .orderBy("stream_seq", "asc")
    .execute();
  for (const r of rows)
    if (r.decision)
      out.set(callKey(r.session_id, r.tool_call_id), { decision: r.decision, approver: r.approver || null });
  return out;
}
