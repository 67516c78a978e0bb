import { z } from "zod";
import { agentId, agentInputCodec, anyJson } from "./agent-input.js";

/** Path of the agent gateway's opencode endpoint. */
export const OPENCODE_HOOK_PATH = "/v1/opencode/hook";

/**
 * The opencode events the plugin `@geode/opencode-plugin` posts (its hook or bus event names,
 * opencode 1.18.33) and what each becomes on the plane. `tool`: it concerns one tool call.
 * `guards`: it runs before something happens, so a fail-closed plugin refuses it when the gateway
 * cannot be reached.
 */
export const OPENCODE_EVENTS = [
  { event: "session.created", plane: "SessionStart", tool: false, guards: false },
  { event: "chat.message", plane: "UserPromptSubmit", tool: false, guards: true },
  { event: "tool.execute.before", plane: "PreToolUse", tool: true, guards: true },
  { event: "permission.ask", plane: "PermissionRequest", tool: true, guards: true },
  { event: "tool.execute.after", plane: "PostToolUse", tool: true, guards: false },
  { event: "session.compacting", plane: "PreCompact", tool: false, guards: false },
  { event: "session.compacted", plane: "PostCompact", tool: false, guards: false },
  { event: "session.idle", plane: null, tool: false, guards: false },
  { event: "session.error", plane: null, tool: false, guards: false },
  { event: "session.deleted", plane: "SessionEnd", tool: false, guards: false },
  /** The plugin's own: opencode disposes of its instance (`opencode run` ends), for each session it saw. */
  { event: "instance.disposed", plane: "SessionEnd", tool: false, guards: false },
] as const;
export type OpencodeEventName = (typeof OPENCODE_EVENTS)[number]["event"];

/**
 * What every body the plugin posts carries: the event and opencode's session id; `parent_session_id`
 * for a sub-agent's session (opencode's `task` tool: its session.created, session.idle and
 * session.error), the model as `provider/model` when opencode names one. Fields the gateway does not read pass through unchecked; `directory` is never
 * forwarded anywhere.
 */
export const OpencodeHookInputSchema = z.looseObject({
  event: z.string().min(1).max(64),
  session_id: agentId,
  parent_session_id: agentId.optional(),
  model: z.string().max(512).optional(),
});
export type OpencodeHookInput = z.infer<typeof OpencodeHookInputSchema>;

const toolCall = { tool: agentId, call_id: agentId.optional(), args: anyJson };

/** The fields each mapped event must carry, beyond the common ones. */
export const OpencodeEventFields = {
  /**
   * A sub-agent's session (with `parent_session_id`) also names its agent (`general`, `explore`,
   * …) and its title (the `task` call's description, then ` (@agent subagent)`).
   */
  "session.created": z.looseObject({
    agent: z.string().max(128).optional(),
    title: z.string().max(512).optional(),
  }),
  "chat.message": z.looseObject({ prompt: z.string(), message_id: agentId.optional() }),
  "tool.execute.before": z.looseObject(toolCall),
  /**
   * opencode's permission: its type (`bash`, `edit`, …), the patterns asked for, its title.
   * opencode 1.18.33 does not call this hook (it publishes `permission.asked` on its bus instead).
   */
  "permission.ask": z.looseObject({
    tool: agentId,
    call_id: agentId.optional(),
    args: anyJson.optional(),
    title: z.string().optional(),
  }),
  "tool.execute.after": z.looseObject({
    ...toolCall,
    /** The text the model reads (opencode's `output`), its title and whether the tool failed. */
    output: z.string().optional(),
    title: z.string().optional(),
    error: z.string().optional(),
  }),
  "session.compacting": z.looseObject({}),
  "session.compacted": z.looseObject({}),
  /** A sub-agent's session names its agent again (`agent`), as its session.created did. */
  "session.idle": z.looseObject({ agent: z.string().max(128).optional() }),
  "session.error": z.looseObject({ error: z.string().optional(), agent: z.string().max(128).optional() }),
  /** `reason`: the plugin's word for the end (`deleted`, `exit`). */
  "session.deleted": z.looseObject({ reason: z.string().max(256).optional() }),
  "instance.disposed": z.looseObject({ reason: z.string().max(256).optional() }),
} as const satisfies Record<OpencodeEventName, z.ZodObject>;

/** The plugin's body, each event checked with its own fields. */
export const OpencodeHookInputCodec = agentInputCodec("event", OpencodeHookInputSchema, OpencodeEventFields);

/**
 * What the gateway answers the plugin; `{}` means "go on". `decision: "deny"` with `reason`: the
 * plugin throws an Error with the reason (tool.execute.before, chat.message: the model or the user
 * reads it) or answers opencode's permission with `deny` (permission.ask); `decision: "allow"`
 * answers a permission with `allow`. `args`: the arguments to run instead (a rewrite).
 * `output`: the tool result the model reads instead of opencode's (a blocked result);
 * `context`: text appended to the result the model reads.
 */
export interface OpencodeHookOutput {
  decision?: "allow" | "deny";
  reason?: string;
  args?: Record<string, unknown>;
  output?: string;
  context?: string;
}

/**
 * The refusal of a guarded opencode event (a deny with the reason); `{}` for the events that
 * guard nothing. Both the gateway (the plane cannot decide) and the plugin (the gateway cannot be
 * reached, fail-closed) give it.
 */
export function opencodeRefusal(event: string, reason: string): OpencodeHookOutput {
  return OPENCODE_EVENTS.some((e) => e.event === event && e.guards) ? { decision: "deny", reason } : {};
}
