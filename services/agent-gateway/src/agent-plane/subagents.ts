import { safeCorrelationId } from "@geode/contracts";
import { startSubagent, stopSubagent } from "@geode/lifecycle";
import type { AgentCall } from "./agent-call.js";

/** A sub-agent as the agent reports it: its id (the child session) and its type. */
export interface SubagentFacts {
  agent_id: string;
  agent_type: string;
  /** What the agent says the sub-agent is for; SubagentStart handlers only. */
  description?: string | undefined;
}

const ids = (call: AgentCall, s: SubagentFacts) => {
  const child = safeCorrelationId(s.agent_id);
  return { task_id: child, task_type: s.agent_type, child_session_id: child, parent: call.corr };
};

/**
 * The agent started a sub-agent: its session record (the agent's id for it, kept if the plane
 * saw it already), SubagentStart, `subagent_started` / `subagent.started`, through the shared
 * lifecycle.
 */
export async function subagentStarted(call: AgentCall, s: SubagentFacts): Promise<void> {
  const { task_id, task_type, child_session_id } = ids(call, s);
  await startSubagent(call.plane.lifecycle, {
    task_id,
    task_type,
    description: s.description ?? "",
    parent_session_id: call.corr.session_id,
    child_session_id,
    child: "ensure",
    provider: call.agent.provider,
    correlation: call.corr,
    signal: call.signal,
  });
}

/**
 * A sub-agent finished: its record is completed (or failed), then SubagentStop and
 * `subagent_completed` (or `subagent_failed`) / `subagent.stopped`, once (a sub-agent whose start
 * went unreported is recorded as started first). Agents that report no duration or failure give
 * 0 and success.
 */
export async function subagentStopped(
  call: AgentCall,
  s: SubagentFacts & { success?: boolean; duration_ms?: number },
): Promise<void> {
  const success = s.success ?? true;
  await stopSubagent(call.plane.lifecycle, ids(call, s), {
    success,
    duration_ms: s.duration_ms ?? 0,
    unknownChild: "record",
    signal: call.signal,
  });
}
