import {
  CODEX_EVENTS,
  CODEX_HOOK_PATH,
  type CodexHookInput,
  CodexHookInputCodec,
  type CodexHookOutput,
} from "@geode/contracts";
import type { AgentAdapter } from "../agent-adapter.js";
import {
  type ClaudeStyleEvent,
  claudeStyleHandlers,
  interruptEvent,
  recordOnlyEvent,
} from "../agent-plane/claude-style-events.js";
import { refuseGuarded } from "../agent-plane/claude-style-outputs.js";

const GUARDED: ReadonlySet<string> = new Set(CODEX_EVENTS.filter((e) => e.guards).map((e) => e.event));
const MAPPED: ReadonlySet<string> = new Set(CODEX_EVENTS.map((e) => e.event));

/**
 * The mapping of docs/codex.md. Codex speaks Claude Code's words, with three differences: it takes
 * `updatedInput` only together with `allow`, so a rewrite is applied only where its own approval
 * is skipped anyway (`permission_mode` `bypassPermissions`), else denied naming the rewrite; it
 * refuses `ask` (and would then run the call), so a requested permission nobody answers is a deny;
 * its PreCompact cannot skip a compaction, so a defer is recorded and compaction goes on.
 */
const SHARED = claudeStyleHandlers({ rewrite: "bypass", unanswered: "deny", defer: "ignore" });
const HANDLERS: ReadonlyMap<string, ClaudeStyleEvent> = new Map([
  ...Object.entries(SHARED).filter(([event]) => MAPPED.has(event)),
  ["Interrupt", interruptEvent],
]);

/**
 * Codex CLI (docs/codex.md): its command hooks POST their stdin to `/v1/codex/hook`;
 * `session_id` and `run_id` = its `session_id`, `turn_id` = its `turn_id`, `tool_call_id` =
 * `tool_use_id`; every input names its model.
 */
export const codexAdapter: AgentAdapter<CodexHookInput, CodexHookOutput> = {
  kind: "codex",
  path: CODEX_HOOK_PATH,
  provider: "openai",
  parse: (body) => CodexHookInputCodec.decode(body),
  eventOf: (input) => input.hook_event_name,
  ids: (input) => ({
    session_id: input.session_id,
    turn_id: input.turn_id,
    tool_call_id: typeof input["tool_use_id"] === "string" ? input["tool_use_id"] : undefined,
    model: input.model,
  }),
  startsSession: (input) => input.hook_event_name === "SessionStart",
  handle: async (call, input) =>
    (await (HANDLERS.get(input.hook_event_name) ?? recordOnlyEvent)(call, input)) as CodexHookOutput,
  unavailable: (event, message) => refuseGuarded(GUARDED, event, message) as CodexHookOutput,
};
