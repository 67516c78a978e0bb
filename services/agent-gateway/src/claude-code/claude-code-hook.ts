import type { Logger } from "@geode/bus";
import {
  CLAUDE_CODE_EVENTS,
  ClaudeCodeEventFields,
  type ClaudeCodeEventName,
  type ClaudeCodeHookInput,
  ClaudeCodeHookInputSchema,
  type ClaudeCodeHookOutput,
  describeIssues,
  ErrorCode,
} from "@geode/contracts";
import type { Plane } from "../plane.js";
import type { SessionTracker } from "../session-tracker.js";
import type { ToolCalls } from "../tool-calls.js";
import { correlationOf } from "./correlation.js";
import { type EventHandler, field } from "./event-context.js";
import {
  postCompactEvent,
  preCompactEvent,
  recordOnlyEvent,
  sessionEndEvent,
  sessionStartEvent,
  subagentStartEvent,
  subagentStopEvent,
} from "./lifecycle.js";
import { block, denyTool, NOTHING, permissionAnswer } from "./outputs.js";
import { stopEvent, stopFailureEvent } from "./stop.js";
import {
  permissionDeniedEvent,
  permissionRequestEvent,
  postToolUseEvent,
  preToolUseEvent,
} from "./tool-use.js";
import { userPromptSubmitEvent } from "./user-prompt.js";

/** The mapping of docs/protocol.md#agent-gateway: one handler per Claude Code event. */
const HANDLERS: Record<ClaudeCodeEventName, EventHandler> = {
  SessionStart: sessionStartEvent,
  UserPromptSubmit: userPromptSubmitEvent,
  PreToolUse: preToolUseEvent,
  PermissionRequest: permissionRequestEvent,
  PostToolUse: postToolUseEvent,
  PostToolUseFailure: postToolUseEvent,
  PermissionDenied: permissionDeniedEvent,
  Stop: stopEvent,
  StopFailure: stopFailureEvent,
  SubagentStart: subagentStartEvent,
  SubagentStop: subagentStopEvent,
  PreCompact: preCompactEvent,
  PostCompact: postCompactEvent,
  Notification: recordOnlyEvent,
  SessionEnd: sessionEndEvent,
};

const GUARDED: ReadonlySet<string> = new Set(CLAUDE_CODE_EVENTS.filter((e) => e.guards).map((e) => e.event));

function isMapped(event: unknown): event is ClaudeCodeEventName {
  return typeof event === "string" && Object.hasOwn(HANDLERS, event);
}

/** Each mapped event's whole input (the common fields and its own), so a body is checked in one pass. */
const INPUT_SCHEMAS = Object.fromEntries(
  Object.entries(ClaudeCodeEventFields).map(([event, fields]) => [
    event,
    ClaudeCodeHookInputSchema.extend(fields.shape),
  ]),
  // Each extends the common schema, so its output is a ClaudeCodeHookInput.
) as unknown as Record<ClaudeCodeEventName, Pick<typeof ClaudeCodeHookInputSchema, "safeParse">>;

/** The body checked against its event's schema (the common one for an event the gateway does not map). */
function parseInput(body: unknown): { input: ClaudeCodeHookInput } | { error: string } {
  const event =
    body !== null && typeof body === "object"
      ? (body as { hook_event_name?: unknown }).hook_event_name
      : undefined;
  if (isMapped(event)) {
    const r = INPUT_SCHEMAS[event].safeParse(body);
    return r.success ? { input: r.data } : { error: `${event}: ${describeIssues(r.error)}` };
  }
  const r = ClaudeCodeHookInputSchema.safeParse(body);
  return r.success ? { input: r.data } : { error: describeIssues(r.error) };
}

/** The HTTP answer to one hook call: 200 with Claude Code's output, or 400 with an error. */
export type HookResponse =
  | { status: 200; body: ClaudeCodeHookOutput }
  | { status: 400; body: { error: { code: string; message: string } } };

export interface ClaudeCodeHookDeps {
  plane: Plane;
  sessions: SessionTracker;
  toolCalls: ToolCalls;
  log: Logger;
}

const invalid = (message: string): HookResponse => ({
  status: 400,
  body: { error: { code: ErrorCode.InvalidRequest, message } },
});

/**
 * What a guarded event answers when the plane cannot decide (the hook-dispatcher or NATS is
 * unreachable, a dependency fails): the call is refused, as a `failure_mode: closed` guard would.
 * Events that guard nothing answer `{}`, so Claude Code goes on.
 */
export function unavailableOutput(event: string, message: string): ClaudeCodeHookOutput {
  if (!GUARDED.has(event)) return NOTHING;
  const reason = `geode: the extension plane could not decide (${message}); a guarded call is refused`;
  if (event === "PreToolUse") return denyTool(reason);
  if (event === "PermissionRequest") return permissionAnswer("deny", reason);
  return block(reason);
}

/** Handles one Claude Code hook call (the parsed JSON body); never throws. */
export async function handleClaudeCodeHook(
  deps: ClaudeCodeHookDeps,
  body: unknown,
  signal: AbortSignal,
): Promise<HookResponse> {
  const parsed = parseInput(body);
  if ("error" in parsed) return invalid(parsed.error);
  const { input } = parsed;
  const event = input.hook_event_name;
  const handler = isMapped(event) ? HANDLERS[event] : recordOnlyEvent;
  const log = deps.log;
  const start = correlationOf(input, 0);
  try {
    // SessionStart creates (or resumes) the session itself; every other event starts it if needed.
    const generation =
      event === "SessionStart" ? 0 : await deps.sessions.ensure(start, signal, field(input, "model"));
    const corr = { ...start, session_generation: generation };
    return {
      status: 200,
      body: await handler({
        input,
        corr,
        plane: deps.plane,
        sessions: deps.sessions,
        toolCalls: deps.toolCalls,
        signal,
        log,
      }),
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.warn(
      { err_type: err instanceof Error ? err.name : typeof err, event, session_id: start.session_id },
      "hook call could not be decided",
    );
    return { status: 200, body: unavailableOutput(event, message) };
  }
}
