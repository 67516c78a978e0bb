import { z } from "zod";
import { agentId, agentInputCodec, anyJson } from "./agent-input.js";

/** Path of the agent gateway's GitHub Copilot CLI endpoint. */
export const COPILOT_HOOK_PATH = "/v1/copilot/hook";

/**
 * The query parameter that names the event of a Copilot CLI hook call. Copilot's native hook input
 * carries no event name (only `permissionRequest` says `hookName`), so each hook command that
 * `geode connect copilot` writes posts to `/v1/copilot/hook?event=<event>`.
 */
export const COPILOT_EVENT_PARAM = "event";

/**
 * The Copilot CLI hook events (native camelCase keys of its hook files, Copilot CLI 1.0.102) and
 * what each becomes on the plane. `tool`: it concerns one tool call. `guards`: it runs before
 * something happens, so a fail-closed set-up refuses it when the gateway cannot be reached.
 */
export const COPILOT_EVENTS = [
  { event: "sessionStart", plane: "SessionStart", tool: false, guards: false },
  { event: "userPromptSubmitted", plane: "UserPromptSubmit", tool: false, guards: true },
  { event: "preToolUse", plane: "PreToolUse", tool: true, guards: true },
  { event: "permissionRequest", plane: "PermissionRequest", tool: true, guards: true },
  { event: "postToolUse", plane: "PostToolUse", tool: true, guards: false },
  { event: "postToolUseFailure", plane: "PostToolUse", tool: true, guards: false },
  { event: "agentStop", plane: "verifier", tool: false, guards: false },
  { event: "subagentStart", plane: "SubagentStart", tool: false, guards: false },
  { event: "subagentStop", plane: "SubagentStop", tool: false, guards: false },
  { event: "preCompact", plane: "PreCompact", tool: false, guards: false },
  { event: "sessionEnd", plane: "SessionEnd", tool: false, guards: false },
  { event: "errorOccurred", plane: null, tool: false, guards: false },
  { event: "userPromptTransformed", plane: null, tool: false, guards: false },
  { event: "notification", plane: null, tool: false, guards: false },
] as const;
export type CopilotEventName = (typeof COPILOT_EVENTS)[number]["event"];

const id = agentId;

/**
 * What every Copilot hook input carries, with `hookName` (the event, from the URL's `event`
 * parameter or the input's own `hookName`). Fields the gateway does not read pass through
 * unchecked; `cwd` and `transcriptPath` are never forwarded anywhere.
 */
export const CopilotHookInputSchema = z.looseObject({
  hookName: z.string().min(1).max(64),
  sessionId: id,
  timestamp: z.union([z.number(), z.string()]).optional(),
  agentId: id.optional(),
  agentType: z.string().optional(),
});
export type CopilotHookInput = z.infer<typeof CopilotHookInputSchema>;

/** The fields each mapped event must carry, beyond the common ones (as Copilot CLI 1.0.102 sends them). */
export const CopilotEventFields = {
  sessionStart: z.looseObject({ source: z.string().optional(), initialPrompt: z.string().optional() }),
  userPromptSubmitted: z.looseObject({ prompt: z.string() }),
  preToolUse: z.looseObject({ toolName: id, toolArgs: anyJson }),
  permissionRequest: z.looseObject({ toolName: id, toolInput: anyJson }),
  postToolUse: z.looseObject({ toolName: id, toolArgs: anyJson, toolResult: anyJson }),
  postToolUseFailure: z.looseObject({ toolName: id, toolArgs: anyJson, error: z.string().optional() }),
  agentStop: z.looseObject({
    stopReason: z.string().optional(),
    stop_hook_active: z.boolean().optional(),
    lastAssistantMessage: z.string().optional(),
  }),
  subagentStart: z.looseObject({ agentName: id, agentDescription: z.string().optional() }),
  subagentStop: z.looseObject({ agentName: id }),
  preCompact: z.looseObject({ trigger: z.string().optional() }),
  sessionEnd: z.looseObject({ reason: z.string().optional() }),
  errorOccurred: z.looseObject({ errorContext: z.string().optional(), recoverable: z.boolean().optional() }),
  userPromptTransformed: z.looseObject({}),
  notification: z.looseObject({}),
} as const satisfies Record<CopilotEventName, z.ZodObject>;

/** Copilot's hook input (its event in `hookName`), each event checked with its own fields. */
export const CopilotHookInputCodec = agentInputCodec("hookName", CopilotHookInputSchema, CopilotEventFields);

/**
 * Copilot CLI's native hook output (the subset the gateway writes); `{}` means "nothing to say".
 * preToolUse: `permissionDecision` (`ask` blocks a run without a user), `modifiedArgs` (taken
 * alone; it grants no permission); permissionRequest: `behavior`, `message`; userPromptSubmitted:
 * `decision: "block"` or `modifiedPrompt`; postToolUse / postToolUseFailure: `additionalContext`;
 * agentStop: `decision: "block"` with `reason` (Copilot goes on with the reason as the next prompt).
 */
export interface CopilotHookOutput {
  permissionDecision?: "allow" | "deny" | "ask";
  permissionDecisionReason?: string;
  modifiedArgs?: Record<string, unknown>;
  behavior?: "allow" | "deny";
  message?: string;
  decision?: "block";
  reason?: string;
  modifiedPrompt?: string;
  additionalContext?: string;
}

/**
 * The refusal of a guarded Copilot event in the form Copilot reads (a deny for preToolUse and
 * permissionRequest, a block for a prompt); `{}` for the events that guard nothing. Both the
 * gateway (the plane cannot decide) and the hook command (the gateway cannot be reached) give it.
 */
export function copilotRefusal(event: string, reason: string): CopilotHookOutput {
  if (event === "preToolUse") return { permissionDecision: "deny", permissionDecisionReason: reason };
  if (event === "permissionRequest") return { behavior: "deny", message: reason };
  if (event === "userPromptSubmitted") return { decision: "block", reason };
  return {};
}
