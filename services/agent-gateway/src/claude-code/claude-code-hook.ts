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
import { correlationOf } from "./correlation.js";
import type { EventHandler } from "./event-context.js";
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

function isMapped(event: string): event is ClaudeCodeEventName {
  return Object.hasOwn(HANDLERS, event);
}

/** The HTTP answer to one hook call: 200 with Claude Code's output, or 400 with an error. */
export type HookResponse =
  | { status: 200; body: ClaudeCodeHookOutput }
  | { status: 400; body: { error: { code: string; message: string } } };

export interface ClaudeCodeHookDeps {
  plane: Plane;
  sessions: SessionTracker;
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
  const base = ClaudeCodeHookInputSchema.safeParse(body);
  if (!base.success) return invalid(describeIssues(base.error));
  const event = base.data.hook_event_name;
  let input: ClaudeCodeHookInput = base.data;
  if (isMapped(event)) {
    const fields = ClaudeCodeEventFields[event].safeParse(body);
    if (!fields.success) return invalid(`${event}: ${describeIssues(fields.error)}`);
    input = { ...base.data, ...fields.data };
  }
  const handler = isMapped(event) ? HANDLERS[event] : recordOnlyEvent;
  const log = deps.log;
  try {
    const start = correlationOf(input, 0);
    // SessionStart creates (or resumes) the session itself; every other event starts it if needed.
    const generation = event === "SessionStart" ? 0 : await deps.sessions.ensure(start, signal);
    const corr = { ...start, session_generation: generation };
    return {
      status: 200,
      body: await handler({ input, corr, plane: deps.plane, sessions: deps.sessions, signal, log }),
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.warn(
      { err_type: err instanceof Error ? err.name : typeof err, event, session_id: input.session_id },
      "hook call could not be decided",
    );
    return { status: 200, body: unavailableOutput(event, message) };
  }
}
