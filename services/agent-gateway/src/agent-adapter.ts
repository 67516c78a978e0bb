import {
  type AgentKind,
  type Correlation,
  correlation,
  ErrorCode,
  isValidRunId,
  safeCorrelation,
} from "@geode/contracts";
import type { AgentCall } from "./agent-plane/agent-call.js";

/** The ids an agent gives a hook call, in its own words mapped to the plane's. */
export interface AgentIds {
  session_id: string;
  turn_id?: string | undefined;
  tool_call_id?: string | undefined;
  /** The model the agent names in this event, if it names one. */
  model?: string | undefined;
}

/**
 * One agent kind's words: its hook input (the body its hooks send), its events mapped to the
 * shared steps of `agent-plane/`, and its hook output. An adapter holds no lifecycle or state of
 * its own; adding an agent adds an adapter.
 */
export interface AgentAdapter<I, O> {
  readonly kind: AgentKind;
  /** `POST` path of its hook endpoint (`/v1/<kind>/hook`). */
  readonly path: string;
  /** Its model provider, as its sessions record it. */
  readonly provider: string;
  /**
   * The body checked against its event's schema; a message naming what is wrong otherwise. `query`
   * is the request URL's (where an agent's input does not name its event, the URL does).
   */
  parse(body: unknown, query: URLSearchParams): { input: I } | { error: string };
  /** The event's name (its `hook_event_name`), for logs and the unavailable answer. */
  eventOf(input: I): string;
  ids(input: I): AgentIds;
  /** True for the event that starts or resumes the session itself (SessionStart). */
  startsSession(input: I): boolean;
  /** Runs the event through the plane and answers in the agent's output format. */
  handle(call: AgentCall, input: I): Promise<O>;
  /**
   * The answer when the plane cannot decide (the dispatcher or NATS unreachable): a guarded event
   * (one that runs before something happens) is refused, the others go on.
   */
  unavailable(event: string, message: string): O;
}

/** An adapter of any agent, as the gateway's routes hold them. */
// biome-ignore lint/suspicious/noExplicitAny: each adapter has its own input and output types.
export type AnyAdapter = AgentAdapter<any, unknown>;

/**
 * The correlation of an agent's hook call: the agent's ids, each made safe (an id that is too
 * long, holds characters unsafe in keys and paths, or looks like a secret becomes a stable
 * digest); the session is a run of its own when its id is a valid run id.
 */
export function correlationOf(ids: AgentIds, generation: number): Correlation {
  const safe = safeCorrelation(
    correlation({
      session_id: ids.session_id,
      turn_id: ids.turn_id ?? "",
      session_generation: generation,
      tool_call_id: ids.tool_call_id ?? "",
    }),
  );
  return { ...safe, run_id: isValidRunId(safe.session_id) ? safe.session_id : "" };
}

/** The HTTP answer to one hook call: 200 with the agent's output, or 400 with an error. */
export type HookResponse<O> =
  | { status: 200; body: O }
  | { status: 400; body: { error: { code: string; message: string } } };

export const invalidRequest = (message: string): HookResponse<never> => ({
  status: 400,
  body: { error: { code: ErrorCode.InvalidRequest, message } },
});
