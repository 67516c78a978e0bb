import {
  COPILOT_EVENT_PARAM,
  COPILOT_EVENTS,
  COPILOT_HOOK_PATH,
  type CopilotHookInput,
  CopilotHookInputCodec,
  type CopilotHookOutput,
  copilotRefusal,
} from "@geode/contracts";
import type { AgentAdapter } from "../agent-adapter.js";
import { COPILOT_HANDLERS, recordOnlyEvent } from "./copilot-events.js";

const GUARDED: ReadonlySet<string> = new Set(COPILOT_EVENTS.filter((e) => e.guards).map((e) => e.event));

/**
 * The body with its event named: the URL's `event` parameter (Copilot's native input carries no
 * event name), else the input's own `hookName` (permissionRequest has one).
 */
function named(body: unknown, query: URLSearchParams): unknown {
  const event = query.get(COPILOT_EVENT_PARAM);
  if (event === null || body === null || typeof body !== "object") return body;
  return { ...(body as Record<string, unknown>), hookName: event };
}

/**
 * When the plane cannot decide, a guarded event is refused in the form Copilot reads (a
 * fail-closed guard that fails); the other events go on.
 */
function unavailableCopilotOutput(event: string, message: string): CopilotHookOutput {
  if (!GUARDED.has(event)) return {};
  return copilotRefusal(
    event,
    `geode: the extension plane could not decide (${message}); a guarded call is refused`,
  );
}

/**
 * GitHub Copilot CLI (docs/copilot.md): its native command hooks POST their stdin to
 * `/v1/copilot/hook?event=<event>`; `session_id` and `run_id` = its `sessionId`. Its input names
 * neither turn, tool call nor model, so those stay empty.
 */
export const copilotAdapter: AgentAdapter<CopilotHookInput, CopilotHookOutput> = {
  kind: "copilot",
  path: COPILOT_HOOK_PATH,
  provider: "github",
  parse: (body, query) => {
    const input = named(body, query);
    if (input !== null && typeof input === "object" && !("hookName" in input))
      return {
        error: `name the Copilot CLI event: ${COPILOT_HOOK_PATH}?${COPILOT_EVENT_PARAM}=<event> (geode connect copilot writes it)`,
      };
    return CopilotHookInputCodec.decode(input);
  },
  eventOf: (input) => input.hookName,
  ids: (input) => ({ session_id: input.sessionId }),
  startsSession: (input) => input.hookName === "sessionStart",
  handle: (call, input) => (COPILOT_HANDLERS[input.hookName] ?? recordOnlyEvent)(call, input),
  unavailable: unavailableCopilotOutput,
};
