import {
  CLAUDE_CODE_EVENTS,
  CLAUDE_CODE_HOOK_PATH,
  type ClaudeCodeHookInput,
  ClaudeCodeHookInputCodec,
  type ClaudeCodeHookOutput,
} from "@geode/contracts";
import type { AgentAdapter } from "../agent-adapter.js";
import {
  type ClaudeStyleEvent,
  claudeStyleHandlers,
  recordOnlyEvent,
} from "../agent-plane/claude-style-events.js";
import { refuseGuarded } from "../agent-plane/claude-style-outputs.js";

const GUARDED: ReadonlySet<string> = new Set(CLAUDE_CODE_EVENTS.filter((e) => e.guards).map((e) => e.event));

/**
 * The mapping of docs/claude-code.md: Claude Code takes a rewritten input alone (`updatedInput`,
 * no allow), can ask its user, and skips a deferred compaction.
 */
const HANDLERS: ReadonlyMap<string, ClaudeStyleEvent> = new Map(
  Object.entries(claudeStyleHandlers({ rewrite: "always", unanswered: "ask", defer: "block" })),
);

/** What a guarded Claude Code event answers when the plane cannot decide; the others answer `{}`. */
export function unavailableOutput(event: string, message: string): ClaudeCodeHookOutput {
  return refuseGuarded(GUARDED, event, message);
}

/**
 * Claude Code (docs/claude-code.md): its `type: "http"` hooks POST their input to
 * `/v1/claude-code/hook`; `session_id` and `run_id` = its `session_id`, `turn_id` = `prompt_id`,
 * `tool_call_id` = `tool_use_id`.
 */
export const claudeCodeAdapter: AgentAdapter<ClaudeCodeHookInput, ClaudeCodeHookOutput> = {
  kind: "claude-code",
  path: CLAUDE_CODE_HOOK_PATH,
  provider: "anthropic",
  parse: (body) => ClaudeCodeHookInputCodec.decode(body),
  eventOf: (input) => input.hook_event_name,
  ids: (input) => ({
    session_id: input.session_id,
    turn_id: input.prompt_id,
    tool_call_id: typeof input["tool_use_id"] === "string" ? input["tool_use_id"] : undefined,
    model: typeof input["model"] === "string" ? input["model"] : undefined,
  }),
  startsSession: (input) => input.hook_event_name === "SessionStart",
  handle: (call, input) => (HANDLERS.get(input.hook_event_name) ?? recordOnlyEvent)(call, input),
  unavailable: unavailableOutput,
};
