import type { AgentKind, SessionRecord } from "@geode/contracts";
import type { CallerIdentity } from "@geode/policy";
import type { AgentStore, SessionStore } from "@geode/state";

interface Cached {
  caller: CallerIdentity;
  at: number;
}

/** The principal of the sessions of a runtime without a gateway agent. */
const RUNTIME_PRINCIPAL = "runtime";

/**
 * Who a session's calls come from: the agent and agent kind the gateway recorded in the session's
 * record (KV `{ns}_sessions`, written before the gateway invokes any hook of that session), and
 * the agent's groups (KV `{ns}_agents`). A session with no record or no agent is a runtime's:
 * principal `runtime`, no groups. Answers are kept for `ttlMs`, so replicas stay interchangeable
 * and a group change applies within that time.
 */
export class CallerDirectory {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly sessions: SessionStore,
    private readonly agents: AgentStore,
    private readonly ttlMs = 2_000,
    private readonly maxCached = 10_000,
  ) {}

  async of(sessionId: string): Promise<CallerIdentity> {
    const hit = this.cache.get(sessionId);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.caller;
    const record = sessionId === "" ? null : await this.sessions.get(sessionId).catch(() => null);
    const caller = await this.callerOf(record);
    if (this.cache.size >= this.maxCached) this.cache.clear();
    // A session without a record is kept as a runtime's too: the gateway and the runtime record a
    // session before they invoke any hook of it.
    this.cache.set(sessionId, { caller, at: Date.now() });
    return caller;
  }

  private async callerOf(record: SessionRecord | null): Promise<CallerIdentity> {
    if (!record?.agent) return { agent: RUNTIME_PRINCIPAL, groups: [] };
    const agent = await this.agents.get(record.agent).catch(() => null);
    const agentKind: AgentKind | undefined = record.agent_kind;
    return { agent: record.agent, agentKind, groups: agent?.groups ?? [] };
  }
}
