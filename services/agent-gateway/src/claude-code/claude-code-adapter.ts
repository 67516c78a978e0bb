import {
  CLAUDE_CODE_EVENTS,
  CLAUDE_CODE_HOOK_PATH,
  type ClaudeCodeEventName,
  type ClaudeCodeHookInput,
  ClaudeCodeHookInputCodec,
  type ClaudeCodeHookOutput,
} from "@geode/contracts";
import type { AgentAdapter } from "../agent-adapter.js";
import { CLAUDE_CODE_HANDLERS, type ClaudeCodeEvent, recordOnlyEvent } from "./events.js";
import { block, denyTool, NOTHING, permissionAnswer } from "./outputs.js";

const GUARDED: ReadonlySet<string> = new Set(CLAUDE_CODE_EVENTS.filter((e) => e.guards).map((e) => e.event));
const HANDLERS: Readonly<Record<ClaudeCodeEventName, ClaudeCodeEvent>> = CLAUDE_CODE_HANDLERS;

const handlerOf = (event: string): ClaudeCodeEvent =>
  Object.hasOwn(HANDLERS, event) ? HANDLERS[event as ClaudeCodeEventName] : recordOnlyEvent;

/**
 * What a guarded event answers when the plane cannot decide (the hook-dispatcher or NATS is
 * unreachable, a dependency fails): the call is refused, as a `failure_mode: closed` guard would.
 * Events that guard nothing answer `{}`, so Claude Code goes on.
 */
export function unavailableOutput(event: string, message: string): ClaudeCodeHookOutput {
  if (!GUARDED.has(event)) return NOTHING;
  const reason = `geode: the extension plane could not decide (${message}); a guarded call is refused`;
  if (event === "PreToolUse") return denyTool(reason);
  if (event === "PermissionRequest") return permissionAnswer("deny", reason);
  return block(reason);
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
  handle: (call, input) => handlerOf(input.hook_event_name)(call, input),
  unavailable: unavailableOutput,
};
