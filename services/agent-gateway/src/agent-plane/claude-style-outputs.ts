import type { ClaudeCodeHookOutput } from "@geode/contracts";

/** The output JSON these agents read (Claude Code's type is the widest of them). */
export type ClaudeStyleOutput = ClaudeCodeHookOutput;

/*
 * The hook output JSON that Claude Code introduced and Codex CLI (and Copilot CLI under its
 * Claude-style hook entries) read in the same shape: `decision`/`reason`, `continue`/`stopReason`,
 * and each event's `hookSpecificOutput`. Built here once; each adapter narrows it to its agent's
 * output type.
 */

export const NOTHING: ClaudeStyleOutput = {};

/** PreToolUse: the tool call does not run; the reason is shown to the model. */
export function denyTool(reason: string, updatedInput?: Record<string, unknown>): ClaudeStyleOutput {
  return preToolUseOutput("deny", reason, updatedInput);
}

export function preToolUseOutput(
  permissionDecision: "allow" | "deny" | "ask" | undefined,
  reason: string | undefined,
  updatedInput?: Record<string, unknown>,
): ClaudeStyleOutput {
  return {
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      ...(permissionDecision ? { permissionDecision } : {}),
      ...(reason ? { permissionDecisionReason: reason } : {}),
      ...(updatedInput ? { updatedInput } : {}),
    },
  };
}

/** PermissionRequest: the agent's permission prompt answered for its user. */
export function permissionAnswer(behavior: "allow" | "deny", message?: string): ClaudeStyleOutput {
  return {
    hookSpecificOutput: {
      hookEventName: "PermissionRequest",
      decision: behavior === "allow" ? { behavior } : { behavior, ...(message ? { message } : {}) },
    },
  };
}

/** `{"decision": "block", "reason"}`: the prompt is not sent, the result is flagged, or the model goes on. */
export function block(reason: string): ClaudeStyleOutput {
  return { decision: "block", reason };
}

/** `{"continue": false, "stopReason"}`: the agent stops and shows the reason. */
export function stopWith(stopReason: string): ClaudeStyleOutput {
  return { continue: false, stopReason };
}

/**
 * What a guarded event answers when the plane cannot decide (the hook-dispatcher or NATS is
 * unreachable, a dependency fails): the call is refused, as a `failure_mode: closed` guard would.
 * Events that guard nothing answer `{}`, so the agent goes on.
 */
export function refuseGuarded(
  guarded: ReadonlySet<string>,
  event: string,
  message: string,
): ClaudeStyleOutput {
  if (!guarded.has(event)) return NOTHING;
  const reason = `geode: the extension plane could not decide (${message}); a guarded call is refused`;
  if (event === "PreToolUse") return denyTool(reason);
  if (event === "PermissionRequest") return permissionAnswer("deny", reason);
  return block(reason);
}
