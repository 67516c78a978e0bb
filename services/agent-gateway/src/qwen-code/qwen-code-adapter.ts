import {
  QWEN_CODE_EVENTS,
  QWEN_CODE_HOOK_PATH,
  type QwenCodeHookInput,
  QwenCodeHookInputCodec,
  type QwenCodeHookOutput,
} from "@geode/contracts";
import type { AgentAdapter } from "../agent-adapter.js";
import {
  type ClaudeStyleEvent,
  claudeStyleHandlers,
  recordOnlyEvent,
} from "../agent-plane/claude-style-events.js";
import { NOTHING, refuseGuarded } from "../agent-plane/claude-style-outputs.js";
import { recordOnly } from "../agent-plane/record-only.js";

const GUARDED: ReadonlySet<string> = new Set(QWEN_CODE_EVENTS.filter((e) => e.guards).map((e) => e.event));
const MAPPED: ReadonlySet<string> = new Set(QWEN_CODE_EVENTS.map((e) => e.event));

/**
 * The mapping of docs/qwen-code.md. Qwen Code speaks Claude Code's words, with these differences:
 * its PreToolUse ignores `updatedInput`, so a rewrite is denied naming the rewrite (the model can
 * run the rewritten call itself); `ask` pauses for its user in the terminal UI (and is a deny
 * headless), so a requested permission nobody answers is `ask`; its PreCompact cannot skip a
 * compaction, so a defer is recorded and compaction goes on; it reads `{"continue": false}` on Stop
 * as one more block (and goes on with the stop reason as the next prompt), so an escalation is `{}`:
 * the turn ends, and the answer waits for review.
 */
const SHARED = claudeStyleHandlers({
  rewrite: "never",
  unanswered: "ask",
  defer: "ignore",
  escalate: "accept",
});

/**
 * UserPromptSubmit: Qwen Code sends it before every model request of a turn. One with text is a
 * prompt (the plane's UserPromptSubmit); the one that only carries tool results back to the model
 * (an empty `prompt`) is recorded only, so a turn's story has one prompt, not one per tool round.
 */
const userPromptSubmit: ClaudeStyleEvent = async (call, input) => {
  const prompt = input["prompt"];
  if (typeof prompt === "string" && prompt.trim() === "" && input["submitted_prompt"] === undefined) {
    recordOnly(call, "UserPromptSubmit", { send: "continuation" });
    return NOTHING;
  }
  return SHARED.UserPromptSubmit(call, input);
};

const HANDLERS: ReadonlyMap<string, ClaudeStyleEvent> = new Map([
  ...Object.entries(SHARED).filter(([event]) => MAPPED.has(event)),
  ["UserPromptSubmit", userPromptSubmit],
]);

const text = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/**
 * The turn of a Qwen Code prompt id (`<session>########<n>`): its run of `#`, which ids may not
 * hold, written `:` (`<session>:<n>`), so the turn stays readable instead of becoming a digest.
 */
const turnOf = (promptId: string | undefined): string | undefined => promptId?.replace(/#+/g, ":");

/**
 * Qwen Code (docs/qwen-code.md): its hooks (command hooks through curl, or `type: "http"`) POST
 * their input to `/v1/qwen-code/hook`; `session_id` and `run_id` = its `session_id`, `turn_id` = its
 * `prompt_id` (`#` runs as `:`), `tool_call_id` = its `tool_call_id` (the model's call id), else its
 * `tool_use_id`.
 */
export const qwenCodeAdapter: AgentAdapter<QwenCodeHookInput, QwenCodeHookOutput> = {
  kind: "qwen-code",
  path: QWEN_CODE_HOOK_PATH,
  provider: "qwen",
  parse: (body) => QwenCodeHookInputCodec.decode(body),
  eventOf: (input) => input.hook_event_name,
  ids: (input) => ({
    session_id: input.session_id,
    turn_id: turnOf(input.prompt_id),
    tool_call_id: text(input["tool_call_id"]) ?? text(input["tool_use_id"]),
    model: text(input["model"]),
  }),
  startsSession: (input) => input.hook_event_name === "SessionStart",
  handle: async (call, input) =>
    (await (HANDLERS.get(input.hook_event_name) ?? recordOnlyEvent)(call, input)) as QwenCodeHookOutput,
  unavailable: (event, message) => refuseGuarded(GUARDED, event, message) as QwenCodeHookOutput,
};
