import type { Logger } from "@geode/bus";
import type { Correlation } from "@geode/contracts";
import type { Plane } from "../plane.js";
import type { AgentIdentity } from "./agent-identity.js";
import type { GuardedHooks } from "./guarded-hooks.js";
import type { SessionTracker } from "./session-tracker.js";
import type { ToolCalls } from "./tool-calls.js";

/**
 * One hook call of an agent, as the shared steps of `agent-plane/` see it: whatever the agent's
 * words, a call is a session's step with a correlation, on the plane.
 */
export interface AgentCall {
  agent: AgentIdentity;
  /** The call's correlation (its ids made safe, the session's generation filled in). */
  corr: Correlation;
  plane: Plane;
  sessions: SessionTracker;
  /** The agent's tool calls between their hook requests (ids, starts recorded). */
  toolCalls: ToolCalls;
  /** Which guarded hooks each agent was seen sending (recorded for `geode agents ls`). */
  guarded: GuardedHooks;
  /** Aborted when the agent gives up on the request (its hook timeout). */
  signal: AbortSignal;
  log: Logger;
}
