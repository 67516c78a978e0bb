import { z } from "zod";
import {
  agentId,
  agentInputCodec,
  CLAUDE_STYLE_EVENT_FIELDS,
  type ClaudeStyleOutput,
  claudeStyleInput,
} from "./agent-input.js";

/** Path of the agent gateway's Codex CLI endpoint. */
export const CODEX_HOOK_PATH = "/v1/codex/hook";

/**
 * The Codex CLI hook events (its `hook_event_name` values, as its generated hook schemas name them)
 * and what each becomes on the plane. `tool`: Codex matches it by tool name (`matcher`). `guards`:
 * it runs before something happens, so a fail-closed set-up refuses it when the gateway cannot
 * be reached.
 */
export const CODEX_EVENTS = [
  { event: "SessionStart", plane: "SessionStart", tool: false, guards: false },
  { event: "UserPromptSubmit", plane: "UserPromptSubmit", tool: false, guards: true },
  { event: "PreToolUse", plane: "PreToolUse", tool: true, guards: true },
  { event: "PermissionRequest", plane: "PermissionRequest", tool: true, guards: true },
  { event: "PostToolUse", plane: "PostToolUse", tool: true, guards: false },
  { event: "PreCompact", plane: "PreCompact", tool: false, guards: false },
  { event: "PostCompact", plane: "PostCompact", tool: false, guards: false },
  { event: "SubagentStart", plane: "SubagentStart", tool: false, guards: false },
  { event: "SubagentStop", plane: "SubagentStop", tool: false, guards: false },
  { event: "Stop", plane: "verifier", tool: false, guards: false },
  { event: "Interrupt", plane: null, tool: false, guards: false },
  { event: "SessionEnd", plane: "SessionEnd", tool: false, guards: false },
] as const;
export type CodexEventName = (typeof CODEX_EVENTS)[number]["event"];

/**
 * What every Codex hook input carries. Fields the gateway does not read pass through unchecked;
 * `transcript_path` and `cwd` are never forwarded anywhere.
 */
export const CodexHookInputSchema = claudeStyleInput({
  turn_id: agentId.optional(),
  model: z.string().optional(),
});
export type CodexHookInput = z.infer<typeof CodexHookInputSchema>;

/** The fields each mapped event must carry, beyond the common ones (Codex 0.171's hook schemas). */
export const CodexEventFields = {
  ...CLAUDE_STYLE_EVENT_FIELDS,
  Stop: z.looseObject({
    stop_hook_active: z.boolean().optional(),
    last_assistant_message: z.string().nullable().optional(),
  }),
  Interrupt: z.looseObject({}),
} as const satisfies Record<CodexEventName, z.ZodObject>;

/** Codex's hook input, each event checked with its own fields. */
export const CodexHookInputCodec = agentInputCodec("hook_event_name", CodexHookInputSchema, CodexEventFields);

/**
 * Codex's hook output (the subset the gateway writes): its common fields plus one event's
 * `hookSpecificOutput`. `{}` means "nothing to say".
 */
export interface CodexHookOutput extends ClaudeStyleOutput {
  hookSpecificOutput?:
    | {
        hookEventName: "PreToolUse";
        permissionDecision?: "allow" | "deny";
        permissionDecisionReason?: string;
        updatedInput?: Record<string, unknown>;
      }
    | {
        hookEventName: "PermissionRequest";
        decision: { behavior: "allow" } | { behavior: "deny"; message?: string };
      }
    | { hookEventName: "PostToolUse"; additionalContext: string };
}
