import type { ClaudeCodeHookOutput } from "@geode/contracts";

export const NOTHING: ClaudeCodeHookOutput = {};

/** PreToolUse: the tool call does not run; the reason is shown to Claude. */
export function denyTool(reason: string, updatedInput?: Record<string, unknown>): ClaudeCodeHookOutput {
  return preToolUseOutput("deny", reason, updatedInput);
}

export function preToolUseOutput(
  permissionDecision: "allow" | "deny" | "ask" | undefined,
  reason: string | undefined,
  updatedInput?: Record<string, unknown>,
): ClaudeCodeHookOutput {
  return {
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      ...(permissionDecision ? { permissionDecision } : {}),
      ...(reason ? { permissionDecisionReason: reason } : {}),
      ...(updatedInput ? { updatedInput } : {}),
    },
  };
}

/** PermissionRequest: Claude Code's permission prompt answered for its user. */
export function permissionAnswer(behavior: "allow" | "deny", message?: string): ClaudeCodeHookOutput {
  return {
    hookSpecificOutput: {
      hookEventName: "PermissionRequest",
      decision: behavior === "allow" ? { behavior } : { behavior, ...(message ? { message } : {}) },
    },
  };
}

/** `{"decision": "block", "reason"}`: the prompt is not sent, the result is flagged, or Claude goes on. */
export function block(reason: string): ClaudeCodeHookOutput {
  return { decision: "block", reason };
}

/** `{"continue": false, "stopReason"}`: Claude Code stops and shows the reason. */
export function stopWith(stopReason: string): ClaudeCodeHookOutput {
  return { continue: false, stopReason };
}
