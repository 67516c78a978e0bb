import { z } from "zod";
import { agentId, agentInputCodec, anyJson } from "./agent-input.js";

/** Path of the agent gateway's Gemini CLI endpoint. */
export const GEMINI_CLI_HOOK_PATH = "/v1/gemini-cli/hook";

/**
 * The Gemini CLI hook events (its `hook_event_name` values, Gemini CLI 0.61.0's `HookEventName`)
 * and what each becomes on the plane (`null`: a runtime event only). `tool`: Gemini matches it by
 * tool name (`matcher`). `guards`: it runs before something happens, so a fail-closed set-up
 * refuses it when the gateway cannot be reached. `connect`: `geode connect gemini-cli` writes a
 * hook for it (the model events fire on every model request, AfterModel on every streamed chunk,
 * each with the whole conversation: the gateway records them when sent, connect does not send them).
 */
export const GEMINI_CLI_EVENTS = [
  { event: "SessionStart", plane: "SessionStart", tool: false, guards: false, connect: true },
  { event: "BeforeAgent", plane: "UserPromptSubmit", tool: false, guards: true, connect: true },
  { event: "BeforeTool", plane: "PreToolUse", tool: true, guards: true, connect: true },
  { event: "AfterTool", plane: "PostToolUse", tool: true, guards: false, connect: true },
  { event: "AfterAgent", plane: "verifier", tool: false, guards: false, connect: true },
  { event: "PreCompress", plane: "PreCompact", tool: false, guards: false, connect: true },
  { event: "Notification", plane: null, tool: false, guards: false, connect: true },
  { event: "BeforeModel", plane: null, tool: false, guards: false, connect: false },
  { event: "AfterModel", plane: null, tool: false, guards: false, connect: false },
  { event: "BeforeToolSelection", plane: null, tool: false, guards: false, connect: false },
  { event: "SessionEnd", plane: "SessionEnd", tool: false, guards: false, connect: true },
] as const;
export type GeminiCliEventName = (typeof GEMINI_CLI_EVENTS)[number]["event"];

const id = agentId;

/**
 * What every Gemini CLI hook input carries (`session_id`, `transcript_path`, `cwd`,
 * `hook_event_name`, `timestamp`). Fields the gateway does not read pass through unchecked;
 * `transcript_path` and `cwd` are never forwarded anywhere.
 */
export const GeminiCliHookInputSchema = z.looseObject({
  session_id: id,
  hook_event_name: z.string().min(1).max(64),
});
export type GeminiCliHookInput = z.infer<typeof GeminiCliHookInputSchema>;

/** The fields each event the gateway reads must carry, beyond the common ones (Gemini CLI 0.61.0). */
export const GeminiCliEventFields = {
  SessionStart: z.looseObject({ source: z.string().optional() }),
  BeforeAgent: z.looseObject({ prompt: z.string() }),
  BeforeTool: z.looseObject({ tool_name: id, tool_input: anyJson }),
  AfterTool: z.looseObject({ tool_name: id, tool_input: anyJson, tool_response: anyJson }),
  AfterAgent: z.looseObject({
    prompt: z.string().optional(),
    prompt_response: z.string().optional(),
    stop_hook_active: z.boolean().optional(),
  }),
  PreCompress: z.looseObject({ trigger: z.string().optional() }),
  Notification: z.looseObject({ notification_type: z.string().optional() }),
  SessionEnd: z.looseObject({ reason: z.string().optional() }),
} as const satisfies Partial<Record<GeminiCliEventName, z.ZodObject>>;

/** Gemini CLI's hook input, each event checked with its own fields. */
export const GeminiCliHookInputCodec = agentInputCodec(
  "hook_event_name",
  GeminiCliHookInputSchema,
  GeminiCliEventFields,
);

/**
 * Gemini CLI's hook output (the subset the gateway writes). `decision: "deny"` refuses a prompt
 * (BeforeAgent), a tool call (BeforeTool) or a tool's result (AfterTool), and makes AfterAgent go
 * on with `reason` as the next prompt; `continue: false` stops the agent loop. `{}` means "nothing
 * to say".
 */
export interface GeminiCliHookOutput {
  continue?: boolean;
  stopReason?: string;
  decision?: "deny";
  reason?: string;
  systemMessage?: string;
  hookSpecificOutput?: {
    hookEventName: "BeforeTool" | "AfterTool";
    /** BeforeTool: merged over the model's arguments before the tool runs. */
    tool_input?: Record<string, unknown>;
    /** AfterTool: appended to the tool's result for the model. */
    additionalContext?: string;
  };
}
