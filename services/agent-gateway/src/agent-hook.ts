import type { Logger } from "@geode/bus";
import { type AgentAdapter, correlationOf, type HookResponse, invalidRequest } from "./agent-adapter.js";
import type { GuardedHooks } from "./agent-plane/guarded-hooks.js";
import type { SessionTracker } from "./agent-plane/session-tracker.js";
import type { ToolCalls } from "./agent-plane/tool-calls.js";
import type { Plane } from "./plane.js";

/** What every agent's hook calls are handled with. */
export interface AgentHookDeps {
  plane: Plane;
  sessions: SessionTracker;
  toolCalls: ToolCalls;
  guarded: GuardedHooks;
  log: Logger;
}

/**
 * Handles one hook call of any agent (the parsed JSON body) with its adapter; never throws. The
 * body is checked against its event's schema (400 otherwise, nothing invoked); the session is
 * started when the plane has not seen it (the event that starts sessions does it itself); when the
 * plane cannot decide, the adapter's unavailable answer refuses a guarded call.
 */
export async function handleAgentHook<I, O>(
  adapter: AgentAdapter<I, O>,
  deps: AgentHookDeps,
  request: { body: unknown; agent: string; signal: AbortSignal; query?: URLSearchParams },
): Promise<HookResponse<O>> {
  const parsed = adapter.parse(request.body, request.query ?? new URLSearchParams());
  if ("error" in parsed) return invalidRequest(parsed.error);
  const { input } = parsed;
  const event = adapter.eventOf(input);
  const ids = adapter.ids(input);
  const start = correlationOf(ids, 0);
  const agent = { kind: adapter.kind, name: request.agent, provider: adapter.provider };
  const { signal } = request;
  try {
    const generation = adapter.startsSession(input)
      ? 0
      : await deps.sessions.ensure(agent, start, signal, ids.model);
    const corr = { ...start, session_generation: generation };
    const call = { ...deps, agent, corr, signal };
    return { status: 200, body: await adapter.handle(call, input) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    deps.log.warn(
      {
        err_type: err instanceof Error ? err.name : typeof err,
        agent_kind: adapter.kind,
        event: event.slice(0, 64),
        session_id: start.session_id,
      },
      "hook call could not be decided",
    );
    return { status: 200, body: adapter.unavailable(event, message) };
  }
}
