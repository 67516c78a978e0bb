import {
  COPILOT_EVENT_PARAM,
  COPILOT_EVENTS,
  COPILOT_HOOK_PATH,
  type CopilotHookInput,
  CopilotHookInputCodec,
  type CopilotHookOutput,
  copilotRefusal,
  sha256,
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
 * The turn of a prompt: Copilot names none, so its `userPromptSubmitted` gets one from the digest
 * of its timestamp and prompt, which the prompt's records (its length, its UserPromptSubmit audits)
 * share: one prompt is one step of the story. Other events belong to no turn.
 */
function turnOf(input: CopilotHookInput): string | undefined {
  if (input.hookName !== "userPromptSubmitted") return undefined;
  const prompt = typeof input["prompt"] === "string" ? input["prompt"] : "";
  return `prompt-${sha256(`${String(input["timestamp"] ?? "")}\u0000${prompt}`).slice(0, 32)}`;
}

/**
 * GitHub Copilot CLI (docs/copilot.md): its native command hooks POST their stdin to
 * `/v1/copilot/hook?event=<event>`; `session_id` and `run_id` = its `sessionId`; `turn_id` of a
 * prompt = a digest of it (`turnOf`). Its input names no tool call (PreToolUse gives each one an
 * id) and no model.
 */
export const copilotAdapter: AgentAdapter<CopilotHookInput, CopilotHookOutput> = {
  kind: "copilot",
  path: COPILOT_HOOK_PATH,
  provider: "github",
  parse: (body, query) => {
    // Read as its first value, a repeated event could be one thing to the plane and another to a proxy.
    if (query.getAll(COPILOT_EVENT_PARAM).length > 1)
      return {
        error: `the ${COPILOT_EVENT_PARAM} parameter is given more than once: name one Copilot CLI event`,
      };
    const input = named(body, query);
    if (input !== null && typeof input === "object" && !("hookName" in input))
      return {
        error: `name the Copilot CLI event: ${COPILOT_HOOK_PATH}?${COPILOT_EVENT_PARAM}=<event> (geode connect copilot writes it)`,
      };
    return CopilotHookInputCodec.decode(input);
  },
  eventOf: (input) => input.hookName,
  ids: (input) => ({ session_id: input.sessionId, turn_id: turnOf(input) }),
  startsSession: (input) => input.hookName === "sessionStart",
  handle: (call, input) => (COPILOT_HANDLERS.get(input.hookName) ?? recordOnlyEvent)(call, input),
  unavailable: unavailableCopilotOutput,
};
