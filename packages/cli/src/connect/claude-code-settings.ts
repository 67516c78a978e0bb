import { CLAUDE_CODE_EVENTS, CLAUDE_CODE_HOOK_PATH } from "@geode/contracts";

import type { FailMode } from "./fail-mode.js";
import { commandFailMode, hookTimeoutSeconds, isGeodeHookCommand, TOKEN_ENV } from "./hook-command.js";

export { TOKEN_ENV };

type HookEntry = Record<string, unknown> & { type: string };
interface MatcherGroup {
  matcher?: string;
  hooks: HookEntry[];
}
export type HooksBlock = Record<string, MatcherGroup[]>;

export interface ClaudeCodeSettingsOptions {
  /** The gateway's Claude Code endpoint (`…/v1/claude-code/hook`). */
  hookUrl: string;
  /** The command Claude Code runs for events it sends only to command hooks (SessionStart). */
  shimCommand: string;
  /** The approval timeout the gateway waits for a human (the tool hooks must wait longer). */
  approvalTimeoutMs: number;
  /**
   * Refuse guarded calls (prompts, tool calls, permission prompts) when the gateway cannot be
   * reached or answers an error (`onFailure: "block"`), instead of Claude Code's default of going on.
   */
  failClosed: boolean;
}

/** Seconds Claude Code waits for one hook call of `event`. */
function timeoutOf(event: string, approvalTimeoutMs: number): number {
  const kind =
    event === "PreToolUse" || event === "PermissionRequest" ? "tool" : event === "Stop" ? "stop" : "other";
  return hookTimeoutSeconds(kind, approvalTimeoutMs);
}

/**
 * The `hooks` block that sends every mapped Claude Code event to the agent gateway: `type: "http"`
 * with the bearer token from `GEODE_AGENT_TOKEN`, and `geode hook-shim` for SessionStart (Claude
 * Code sends it to command hooks only).
 */
export function claudeCodeHooks(options: ClaudeCodeSettingsOptions): HooksBlock {
  const hooks: HooksBlock = {};
  for (const e of CLAUDE_CODE_EVENTS) {
    const timeout = timeoutOf(e.event, options.approvalTimeoutMs);
    const onFailure = options.failClosed && e.guards ? { onFailure: "block" } : {};
    const entry: HookEntry = e.http
      ? {
          type: "http",
          url: options.hookUrl,
          headers: { Authorization: `Bearer $${TOKEN_ENV}` },
          allowedEnvVars: [TOKEN_ENV],
          timeout,
          ...onFailure,
        }
      : { type: "command", command: options.shimCommand, timeout };
    hooks[e.event] = [{ ...(e.tool ? { matcher: "*" } : {}), hooks: [entry] }];
  }
  return hooks;
}

/** True for a hook entry this command wrote before (so a second run replaces it, never doubles it). */
export function isOurs(entry: unknown): boolean {
  if (entry === null || typeof entry !== "object") return false;
  const e = entry as Record<string, unknown>;
  if (e["type"] === "http" && typeof e["url"] === "string") return e["url"].endsWith(CLAUDE_CODE_HOOK_PATH);
  return e["type"] === "command" && isGeodeHookCommand(e["command"]);
}

/**
 * What one of our entries does when the gateway cannot answer: an http hook blocks only with
 * `onFailure: "block"` (Claude Code goes on after a non-2xx answer or no answer otherwise), a
 * command hook by its exit code. Null for an entry not ours.
 */
export function entryFailMode(entry: unknown): FailMode | null {
  if (!isOurs(entry)) return null;
  const e = entry as Record<string, unknown>;
  if (e["type"] === "http") return e["onFailure"] === "block" ? "fail-closed" : "fail-open";
  return commandFailMode(e["command"]);
}

/**
 * Merges `ours` into a settings object: every other key and every hook already there is kept;
 * hooks this command wrote before (`wroteBefore`, Claude Code's by default) are replaced. Throws on a settings value that is not an object.
 */
export function mergeHooks(
  settings: unknown,
  ours: HooksBlock,
  wroteBefore: (entry: unknown) => boolean = isOurs,
): Record<string, unknown> {
  if (settings === null || typeof settings !== "object" || Array.isArray(settings))
    throw new Error("the settings file does not hold a JSON object");
  const out = { ...(settings as Record<string, unknown>) };
  const existing = out["hooks"] ?? {};
  if (existing === null || typeof existing !== "object" || Array.isArray(existing))
    throw new Error('the settings file\'s "hooks" is not an object');
  const merged: Record<string, unknown> = { ...(existing as Record<string, unknown>) };
  for (const [event, groups] of Object.entries(ours)) {
    const before = Array.isArray(merged[event]) ? (merged[event] as unknown[]) : [];
    const kept = before
      .map((g) => {
        if (g === null || typeof g !== "object" || !Array.isArray((g as MatcherGroup).hooks)) return g;
        return { ...(g as MatcherGroup), hooks: (g as MatcherGroup).hooks.filter((h) => !wroteBefore(h)) };
      })
      .filter(
        (g) =>
          !(
            g &&
            typeof g === "object" &&
            Array.isArray((g as MatcherGroup).hooks) &&
            (g as MatcherGroup).hooks.length === 0
          ),
      );
    merged[event] = [...kept, ...groups];
  }
  out["hooks"] = merged;
  return out;
}
