import { RuntimeEvent } from "@geode/contracts";
import type { AgentCall } from "./agent-call.js";

/**
 * An agent event with no public hook (notifications, model calls, any event this gateway does not
 * know): recorded as `adapter_dispatch_attempt` only, with its name and a few bounded facts.
 */
export function recordOnly(call: AgentCall, eventName: string, facts: Record<string, string> = {}): void {
  const bounded = Object.fromEntries(Object.entries(facts).map(([k, v]) => [k, v.slice(0, 64)]));
  call.plane.emit(
    RuntimeEvent.ADAPTER_DISPATCH_ATTEMPT,
    { adapter: call.agent.kind, hook_event_name: eventName.slice(0, 64), ...bounded },
    call.corr,
  );
}
