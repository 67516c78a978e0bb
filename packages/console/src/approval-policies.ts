import { parsePolicyReason } from "@geode/policy";
import { sql } from "kysely";
import type { PendingApproval } from "./pending-approvals.js";
import { type ConsoleProjection, tables } from "./session-list.js";

/**
 * The pending approvals with the policies that sent each call to a person: the approval request
 * names only the call (its correlation), so they come from the call's audited handler reasons in
 * the projection (an enforced `@ask` is audited `ok` with `<reason> (policy <ids>)`). Best effort:
 * without a projection, or before the recorder has written the call, an approval keeps `[]`.
 */
export async function withDecidingPolicies(
  projection: ConsoleProjection | null,
  approvals: PendingApproval[],
): Promise<PendingApproval[]> {
  const calls = approvals.filter((a) => a.correlation.session_id && a.correlation.tool_call_id);
  if (!projection || calls.length === 0) return approvals;
  const t = tables(projection.ns);
  let rows: Array<{ session_id: string; tool_call_id: string; reason: string }>;
  try {
    rows = (
      await sql<{ session_id: string; tool_call_id: string; reason: string }>`
        select session_id, tool_call_id, payload->>'reason' as reason
        from ${t.activity}
        where event = 'extension_invoked'
          and session_id in (${sql.join(calls.map((a) => a.correlation.session_id))})
          and tool_call_id in (${sql.join(calls.map((a) => a.correlation.tool_call_id))})
          and payload->>'name' in ('PreToolUse', 'PermissionRequest')
          and payload->>'reason' is not null
        order by stream_seq desc`.execute(projection.db)
    ).rows;
  } catch {
    return approvals;
  }
  const found = new Map<string, { policies: string[]; reason: string }>();
  for (const r of rows) {
    const key = JSON.stringify([r.session_id, r.tool_call_id]);
    if (found.has(key)) continue;
    const parsed = parsePolicyReason(r.reason);
    // An audit-mode note never asked anyone: only an enforced reason names who did.
    if (parsed.mode === "enforce" && parsed.policies.length > 0)
      found.set(key, { policies: parsed.policies, reason: parsed.reason });
  }
  return approvals.map((a) => {
    const f = found.get(JSON.stringify([a.correlation.session_id, a.correlation.tool_call_id]));
    return f ? { ...a, policies: f.policies, policy_reason: f.reason } : a;
  });
}
