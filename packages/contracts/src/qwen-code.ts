import { z } from "zod";
import {
  agentId,
  agentInputCodec,
  anyJson,
  CLAUDE_STYLE_EVENT_FIELDS,
  claudeStyleInput,
} from "./agent-input.js";
import type { ClaudeCodeHookOutput } from "./claude-code.js";

/** Path of the agent gateway's Qwen Code endpoint. */
export const QWEN_CODE_HOOK_PATH = "/v1/qwen-code/hook";

/**
 * The Qwen Code hook events the gateway maps (its `hook_event_name` values, Qwen Code 0.24.4), and
 * what each becomes on the plane. Its hooks speak Claude Code's words; where they differ:
 *
 * - Its event list is its own: beside Claude Code's events it has `PostToolBatch`,
 *   `UserPromptExpansion`, `MessageDisplay`, `SessionDelete`, `TodoCreated`, `TodoCompleted`,
 *   `InstructionsLoaded` (recorded only when sent; `geode connect qwen-code` writes hooks for the
 *   events below only). Headless (`qwen -p`) it sends no `SessionEnd`.
 * - Its UserPromptSubmit fires before every model request of a turn, the one that carries tool
 *   results too (then with an empty `prompt` and no `submitted_prompt`): only one with text is a
 *   prompt to the plane; an empty one is recorded only.
 * - Its tool events carry both `tool_use_id` (Qwen Code's own id, `toolu_…`) and `tool_call_id`
 *   (the model's call id, `call_…`, optional): the plane's `tool_call_id` is its `tool_call_id`,
 *   else its `tool_use_id`. PermissionRequest carries neither.
 * - A `type: "http"` hook that cannot connect or gets a non-2xx answer does not block (the call
 *   runs); only a command hook's exit 2 or a deny does. Fail-closed hooks are therefore command
 *   hooks (`http: false` below marks none: Qwen Code sends every event to both types).
 *
 * `tool`: Qwen Code matches it by tool name (`matcher`). `guards`: it runs before something happens
 * (a prompt is sent, a tool runs), so a fail-closed set-up refuses it when the gateway cannot be
 * reached.
 */
export const QWEN_CODE_EVENTS = [
  { event: "SessionStart", plane: "SessionStart", tool: false, guards: false },
  { event: "UserPromptSubmit", plane: "UserPromptSubmit", tool: false, guards: true },
  { event: "PreToolUse", plane: "PreToolUse", tool: true, guards: true },
  { event: "PermissionRequest", plane: "PermissionRequest", tool: true, guards: true },
  { event: "PostToolUse", plane: "PostToolUse", tool: true, guards: false },
  { event: "PostToolUseFailure", plane: "PostToolUse", tool: true, guards: false },
  { event: "PermissionDenied", plane: null, tool: true, guards: false },
  { event: "Stop", plane: "verifier", tool: false, guards: false },
  { event: "StopFailure", plane: null, tool: false, guards: false },
  { event: "SubagentStart", plane: "SubagentStart", tool: false, guards: false },
  { event: "SubagentStop", plane: "SubagentStop", tool: false, guards: false },
  { event: "PreCompact", plane: "PreCompact", tool: false, guards: false },
  { event: "PostCompact", plane: "PostCompact", tool: false, guards: false },
  { event: "Notification", plane: null, tool: false, guards: false },
  { event: "SessionEnd", plane: "SessionEnd", tool: false, guards: false },
] as const;
export type QwenCodeEventName = (typeof QWEN_CODE_EVENTS)[number]["event"];

const id = agentId;
/** Qwen Code's two ids of one tool call: its own (`toolu_…`) and the model's (`call_…`, optional). */
const toolIds = { tool_use_id: id.optional(), tool_call_id: id.optional() };

/**
 * What every Qwen Code hook input carries (`prompt_id` when the event belongs to a model turn).
 * Fields the gateway does not read pass through unchecked (Qwen Code adds optional fields between
 * releases); `transcript_path` and `cwd` are never forwarded anywhere.
 */
export const QwenCodeHookInputSchema = claudeStyleInput({ prompt_id: id.optional() });
export type QwenCodeHookInput = z.infer<typeof QwenCodeHookInputSchema>;

/** The fields each mapped event must carry, beyond the common ones (Qwen Code 0.24.4's hooks guide). */
export const QwenCodeEventFields = {
  ...CLAUDE_STYLE_EVENT_FIELDS,
  SessionStart: CLAUDE_STYLE_EVENT_FIELDS.SessionStart.extend({ model: z.string().optional() }),
  UserPromptSubmit: CLAUDE_STYLE_EVENT_FIELDS.UserPromptSubmit.extend({
    submitted_prompt: z.string().optional(),
  }),
  PreToolUse: CLAUDE_STYLE_EVENT_FIELDS.PreToolUse.extend(toolIds),
  PostToolUse: CLAUDE_STYLE_EVENT_FIELDS.PostToolUse.extend({
    ...toolIds,
    duration_ms: z.number().optional(),
  }),
  PostToolUseFailure: z.looseObject({
    tool_name: id,
    tool_input: anyJson,
    ...toolIds,
    error: z.string().optional(),
    is_interrupt: z.boolean().optional(),
    duration_ms: z.number().optional(),
  }),
  PermissionDenied: z.looseObject({ tool_name: id, ...toolIds, reason: z.string().optional() }),
  Stop: z.looseObject({
    stop_hook_active: z.boolean().optional(),
    last_assistant_message: z.string().optional(),
  }),
  StopFailure: z.looseObject({ error: anyJson.optional() }),
  Notification: z.looseObject({ notification_type: z.string().optional() }),
} as const satisfies Record<QwenCodeEventName, z.ZodObject>;

/** Qwen Code's hook input, each event checked with its own fields. */
export const QwenCodeHookInputCodec = agentInputCodec(
  "hook_event_name",
  QwenCodeHookInputSchema,
  QwenCodeEventFields,
);

/**
 * Qwen Code's hook output (the subset the gateway writes; the same JSON as Claude Code's). `ask`
 * pauses for its user in the terminal UI and is a deny headless. `{}` means "nothing to say".
 */
export type QwenCodeHookOutput = ClaudeCodeHookOutput;
