import { z } from "zod";
import {
  agentId,
  agentInputCodec,
  anyJson,
  CLAUDE_STYLE_EVENT_FIELDS,
  type ClaudeStyleOutput,
  claudeStyleInput,
} from "./agent-input.js";

/** Path of the agent gateway's Claude Code endpoint. */
export const CLAUDE_CODE_HOOK_PATH = "/v1/claude-code/hook";

/**
 * The Claude Code hook events the gateway maps (its `hook_event_name` values), and what each
 * becomes on the plane. `tool`: Claude Code matches it by tool name (`matcher`). `guards`: it runs
 * before something happens (a prompt is sent, a tool runs), so a strict set-up blocks it when the
 * gateway cannot be reached. `http`: Claude Code sends it to `type: "http"` hooks (it sends
 * SessionStart only to command hooks, so that one goes through `geode hook-shim`).
 */
export const CLAUDE_CODE_EVENTS = [
  { event: "SessionStart", plane: "SessionStart", tool: false, guards: false, http: false },
  { event: "UserPromptSubmit", plane: "UserPromptSubmit", tool: false, guards: true, http: true },
  { event: "PreToolUse", plane: "PreToolUse", tool: true, guards: true, http: true },
  { event: "PermissionRequest", plane: "PermissionRequest", tool: true, guards: true, http: true },
  { event: "PostToolUse", plane: "PostToolUse", tool: true, guards: false, http: true },
  { event: "PostToolUseFailure", plane: "PostToolUse", tool: true, guards: false, http: true },
  { event: "PermissionDenied", plane: null, tool: true, guards: false, http: true },
  { event: "Stop", plane: "verifier", tool: false, guards: false, http: true },
  { event: "StopFailure", plane: null, tool: false, guards: false, http: true },
  { event: "SubagentStart", plane: "SubagentStart", tool: false, guards: false, http: true },
  { event: "SubagentStop", plane: "SubagentStop", tool: false, guards: false, http: true },
  { event: "PreCompact", plane: "PreCompact", tool: false, guards: false, http: true },
  { event: "PostCompact", plane: "PostCompact", tool: false, guards: false, http: true },
  { event: "Notification", plane: null, tool: false, guards: false, http: true },
  { event: "SessionEnd", plane: "SessionEnd", tool: false, guards: false, http: true },
] as const;
export type ClaudeCodeEventName = (typeof CLAUDE_CODE_EVENTS)[number]["event"];

const id = agentId;
const text = z.string();

/**
 * What every Claude Code hook input carries. Fields the gateway does not read pass through
 * unchecked (Claude Code adds fields between releases); `transcript_path` and `cwd` are never
 * forwarded anywhere.
 */
export const ClaudeCodeHookInputSchema = claudeStyleInput({ prompt_id: id.optional() });
export type ClaudeCodeHookInput = z.infer<typeof ClaudeCodeHookInputSchema>;

/** The fields each mapped event must carry, beyond the common ones. */
export const ClaudeCodeEventFields = {
  ...CLAUDE_STYLE_EVENT_FIELDS,
  SessionStart: CLAUDE_STYLE_EVENT_FIELDS.SessionStart.extend({ model: z.string().optional() }),
  PostToolUse: CLAUDE_STYLE_EVENT_FIELDS.PostToolUse.extend({ duration_ms: z.number().optional() }),
  PostToolUseFailure: z.looseObject({
    tool_name: id,
    tool_input: anyJson,
    tool_use_id: id.optional(),
    error: z.string().optional(),
    is_interrupt: z.boolean().optional(),
    duration_ms: z.number().optional(),
  }),
  PermissionDenied: z.looseObject({
    tool_name: id,
    tool_use_id: id.optional(),
    reason: z.string().optional(),
  }),
  Stop: z.looseObject({ stop_hook_active: z.boolean().optional(), last_assistant_message: text.optional() }),
  StopFailure: z.looseObject({ error: anyJson.optional() }),
  Notification: z.looseObject({ notification_type: z.string().optional() }),
} as const satisfies Record<ClaudeCodeEventName, z.ZodType>;

/** Claude Code's hook input, each event checked with its own fields. */
export const ClaudeCodeHookInputCodec = agentInputCodec(
  "hook_event_name",
  ClaudeCodeHookInputSchema,
  ClaudeCodeEventFields,
);

/**
 * Claude Code's hook output (the subset the gateway writes): common fields plus one event's
 * `hookSpecificOutput`. `{}` means "nothing to say".
 */
export interface ClaudeCodeHookOutput extends ClaudeStyleOutput {
  hookSpecificOutput?:
    | {
        hookEventName: "PreToolUse";
        permissionDecision?: "allow" | "deny" | "ask";
        permissionDecisionReason?: string;
        updatedInput?: Record<string, unknown>;
      }
    | {
        hookEventName: "PermissionRequest";
        decision: { behavior: "allow" } | { behavior: "deny"; message?: string };
      }
    | { hookEventName: "PostToolUse" | "PostToolUseFailure"; additionalContext: string };
}
