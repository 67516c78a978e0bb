import type { Logger } from "@geode/bus";
import type { ClaudeCodeHookInput, ClaudeCodeHookOutput, Correlation } from "@geode/contracts";
import type { Plane } from "../plane.js";
import type { SessionTracker } from "../session-tracker.js";
import type { ToolCalls } from "../tool-calls.js";

/** What one Claude Code hook call is handled with. */
export interface EventContext {
  /** The hook input as Claude Code sent it (validated for its event). */
  input: ClaudeCodeHookInput;
  /** The correlation of this call (docs/protocol.md#agent-gateway) (session generation filled in). */
  corr: Correlation;
  plane: Plane;
  sessions: SessionTracker;
  /** The agent's tool calls between their hook requests (ids, starts recorded). */
  toolCalls: ToolCalls;
  /** Aborted when Claude Code gives up on the request (its hook timeout). */
  signal: AbortSignal;
  log: Logger;
}

export type EventHandler = (ctx: EventContext) => Promise<ClaudeCodeHookOutput>;

/** A string field of the input (validated by the event's schema before the handler runs). */
export function field(input: ClaudeCodeHookInput, name: string): string | undefined {
  const v = input[name];
  return typeof v === "string" ? v : undefined;
}

/** A JSON value as a free object: objects as they are, anything else under `value`. */
export function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : { value: value ?? null };
}
