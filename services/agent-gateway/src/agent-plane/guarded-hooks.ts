import { correlation, type GuardedToolHook, RuntimeEvent } from "@geode/contracts";
import type { Plane } from "../plane.js";
import type { AgentIdentity } from "./agent-identity.js";

/** How often one replica records again that an agent's guarded hook arrived. */
const RESEEN_MS = 60 * 60_000;

/**
 * Which guarded hooks (PreToolUse, PermissionRequest) each agent's hook calls have reached this
 * replica with, recorded as `adapter_dispatch_attempt` `{adapter, hook_event_name, agent,
 * guarded: true}` in no session, the first time and then at most once an hour per agent, kind and hook: `geode
 * agents ls` and the console read it to say whether an agent's guards are wired at all.
 */
export class GuardedHooks {
  private readonly lastRecorded = new Map<string, number>();

  constructor(private readonly max = 10_000) {}

  /** `agent`'s hook call reached the gateway with the guarded hook `hook`. */
  seen(plane: Pick<Plane, "emit">, agent: AgentIdentity, hook: GuardedToolHook): void {
    const key = `${agent.name}\u0000${agent.kind}\u0000${hook}`;
    const now = Date.now();
    const last = this.lastRecorded.get(key);
    if (last !== undefined && now - last < RESEEN_MS) return;
    if (this.lastRecorded.size >= this.max) this.lastRecorded.clear();
    this.lastRecorded.set(key, now);
    plane.emit(
      RuntimeEvent.ADAPTER_DISPATCH_ATTEMPT,
      { adapter: agent.kind, hook_event_name: hook, agent: agent.name, guarded: true },
      // A fact about the agent, not about the session it came in.
      correlation({ session_id: "" }),
    );
  }
}
