import { z } from "zod";
import { describeIssues } from "./errors.js";

/** The codec of one agent's hook input: its common fields, and the fields each mapped event adds. */
export interface AgentInputCodec<T> {
  /** The body checked in one pass against its event's schema (the common one for other events). */
  decode(body: unknown): { input: T } | { error: string };
}

/**
 * Builds an agent's hook-input codec: `common` is what every event carries (fields the gateway
 * does not read pass through, as agents add fields between releases), `events[name]` what event
 * `name` carries beyond it; `eventField` names the event (`hook_event_name`).
 */
export function agentInputCodec<C extends z.ZodObject>(
  eventField: string,
  common: C,
  events: Readonly<Record<string, z.ZodObject>>,
): AgentInputCodec<z.infer<C>> {
  const schemas = new Map<string, z.ZodType>(
    Object.entries(events).map(([event, fields]) => [event, common.extend(fields.shape)]),
  );
  return {
    decode(body) {
      const event =
        body !== null && typeof body === "object" ? (body as Record<string, unknown>)[eventField] : undefined;
      const schema = typeof event === "string" ? schemas.get(event) : undefined;
      const r = (schema ?? common).safeParse(body);
      if (r.success) return { input: r.data as z.infer<C> };
      return { error: schema ? `${String(event)}: ${describeIssues(r.error)}` : describeIssues(r.error) };
    },
  };
}

/** An id an agent sends (session, turn, tool call, sub-agent): 1 to 512 characters. */
export const agentId = z.string().min(1).max(512);
/** Tool input and output as agents send them: any JSON value. */
export const anyJson = z.unknown();

/**
 * What every hook input in Claude Code's format carries (Codex CLI's hooks use the same format):
 * the session, the event's name, the permission mode and, inside a sub-agent, its id and type;
 * `extra` adds an agent's own common fields.
 */
export function claudeStyleInput<E extends z.ZodRawShape>(extra: E) {
  return z.looseObject({
    session_id: agentId,
    hook_event_name: z.string().min(1).max(64),
    permission_mode: z.string().optional(),
    agent_id: agentId.optional(),
    agent_type: z.string().optional(),
    ...extra,
  });
}

const toolCall = { tool_name: agentId, tool_input: anyJson };

/** The fields of the events Claude Code's format and Codex CLI's share, beyond the common ones. */
export const CLAUDE_STYLE_EVENT_FIELDS = {
  SessionStart: z.looseObject({ source: z.string().optional() }),
  UserPromptSubmit: z.looseObject({ prompt: z.string() }),
  PreToolUse: z.looseObject({ ...toolCall, tool_use_id: agentId.optional() }),
  PermissionRequest: z.looseObject(toolCall),
  PostToolUse: z.looseObject({ ...toolCall, tool_response: anyJson, tool_use_id: agentId.optional() }),
  PreCompact: z.looseObject({ trigger: z.string().optional() }),
  PostCompact: z.looseObject({ trigger: z.string().optional() }),
  SubagentStart: z.looseObject({ agent_id: agentId, agent_type: z.string().optional() }),
  SubagentStop: z.looseObject({ agent_id: agentId, agent_type: z.string().optional() }),
  SessionEnd: z.looseObject({ reason: z.string().optional() }),
};

/** The fields every hook output in Claude Code's format may carry (Codex CLI reads the same). */
export interface ClaudeStyleOutput {
  continue?: boolean;
  stopReason?: string;
  decision?: "block";
  reason?: string;
  systemMessage?: string;
}
