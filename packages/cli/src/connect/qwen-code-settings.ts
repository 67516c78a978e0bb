import { realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { QWEN_CODE_EVENTS, QWEN_CODE_HOOK_PATH } from "@geode/contracts";
import type { HooksBlock } from "./claude-code-settings.js";
import type { FailMode } from "./fail-mode.js";
import { readSettings } from "./gemini-settings.js";
import {
  agentHookCommand,
  commandFailMode,
  hookTimeoutSeconds,
  isGeodeHookCommand,
  TOKEN_ENV,
} from "./hook-command.js";

/** The name geode's hooks carry in Qwen Code's settings (its `/hooks` browser shows it). */
const QWEN_HOOK_NAME = "geode";

export interface QwenCodeHooksOptions {
  /** The gateway's Qwen Code endpoint (`…/v1/qwen-code/hook`). */
  endpoint: string;
  /** The approval timeout the gateway waits for a human (the tool hooks must wait longer). */
  approvalTimeoutMs: number;
  /**
   * Guarded events (prompts, tool calls) refuse when the gateway cannot answer: command hooks that
   * exit 2 then. Otherwise `type: "http"` hooks, which Qwen Code 0.24.4 lets go on when the
   * gateway cannot be reached or answers an error.
   */
  failClosed: boolean;
}

/** Seconds Qwen Code waits for one hook call of `event` (its `timeout` is in seconds). */
function timeoutOf(event: string, tool: boolean, approvalTimeoutMs: number): number {
  return hookTimeoutSeconds(event === "Stop" ? "stop" : tool ? "tool" : "other", approvalTimeoutMs);
}

/**
 * The `hooks` block that sends every mapped Qwen Code event to the agent gateway: fail-closed, a
 * command hook running the gateway's curl command (exit 2, which Qwen Code reads as a refusal,
 * where the event guards and the gateway cannot answer); fail-open, `type: "http"` hooks with the
 * bearer token from `GEODE_AGENT_TOKEN`.
 */
export function qwenCodeHooks(options: QwenCodeHooksOptions): HooksBlock {
  const hooks: HooksBlock = {};
  for (const e of QWEN_CODE_EVENTS) {
    const timeout = timeoutOf(e.event, e.tool, options.approvalTimeoutMs);
    const entry = options.failClosed
      ? {
          name: QWEN_HOOK_NAME,
          type: "command",
          command: agentHookCommand(options.endpoint, e.guards, timeout),
          timeout,
        }
      : {
          name: QWEN_HOOK_NAME,
          type: "http",
          url: options.endpoint,
          headers: { Authorization: `Bearer \${${TOKEN_ENV}}` },
          allowedEnvVars: [TOKEN_ENV],
          timeout,
        };
    hooks[e.event] = [{ ...(e.tool ? { matcher: "*" } : {}), hooks: [entry] }];
  }
  return hooks;
}

/** True for a hook entry `geode connect qwen-code` wrote (a second run replaces it, never doubles it). */
export function isOurQwenHook(entry: unknown): boolean {
  if (entry === null || typeof entry !== "object") return false;
  const e = entry as Record<string, unknown>;
  if (e["type"] === "http" && typeof e["url"] === "string") {
    try {
      return new URL(e["url"]).pathname === QWEN_CODE_HOOK_PATH;
    } catch {
      return false; // not a URL: not a hook connect wrote
    }
  }
  return e["type"] === "command" && isGeodeHookCommand(e["command"]);
}

/** What one of our entries does when the gateway cannot answer (an http hook always goes on). */
export function qwenHookFailMode(entry: unknown): FailMode | null {
  if (!isOurQwenHook(entry)) return null;
  const e = entry as Record<string, unknown>;
  return e["type"] === "http" ? "fail-open" : commandFailMode(e["command"]);
}

/** Qwen Code's own folder: `QWEN_HOME`, else `~/.qwen`. */
function qwenHome(env: NodeJS.ProcessEnv): string {
  return env["QWEN_HOME"] ? path.resolve(env["QWEN_HOME"]) : path.join(env["HOME"] || os.homedir(), ".qwen");
}

/** Qwen Code's user settings: `~/.qwen/settings.json`. */
export const qwenUserSettings = (env: NodeJS.ProcessEnv): string => path.join(qwenHome(env), "settings.json");

/** The project settings of `folder`: `.qwen/settings.json` (read only in a folder Qwen Code trusts). */
export const qwenProjectSettings = (folder: string): string => path.join(folder, ".qwen", "settings.json");

/** Qwen Code's system settings: `QWEN_CODE_SYSTEM_SETTINGS_PATH`, else `/etc/qwen-code/settings.json`. */
export const qwenSystemSettings = (env: NodeJS.ProcessEnv): string =>
  env["QWEN_CODE_SYSTEM_SETTINGS_PATH"] || "/etc/qwen-code/settings.json";

/** Qwen Code's trust rules: `QWEN_CODE_TRUSTED_FOLDERS_PATH`, else `~/.qwen/trustedFolders.json`. */
const qwenTrustedFolders = (env: NodeJS.ProcessEnv): string =>
  env["QWEN_CODE_TRUSTED_FOLDERS_PATH"] || path.join(qwenHome(env), "trustedFolders.json");

const real = (p: string) => {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
};

/** How deep `rule` holds `folder` (its path's length), or -1 when it does not hold it. */
function depthOf(rule: string, folder: string): number {
  const rel = path.relative(real(rule), folder);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel)) ? real(rule).length : -1;
}

/**
 * Whether Qwen Code trusts `folder` enough to read its project settings (0.24.4's rules): folder
 * trust off (the default; `security.folderTrust.enabled` in the system settings, else the user's)
 * trusts every folder; on, the deepest rule of `trustedFolders.json` that holds the folder decides
 * (`TRUST_FOLDER`, `TRUST_PARENT` of its parent, `DO_NOT_TRUST`, which wins a tie), and a folder
 * no rule names is not trusted. Null when trusted, else why not.
 */
export function qwenTrustProblem(folder: string, env: NodeJS.ProcessEnv): string | null {
  const enabledIn = (file: string) => {
    const r = readSettings(file);
    if (!("settings" in r)) return undefined;
    const security = r.settings["security"] as { folderTrust?: { enabled?: unknown } } | undefined;
    return security?.folderTrust?.enabled;
  };
  const system = enabledIn(qwenSystemSettings(env));
  const enabled = system ?? enabledIn(qwenUserSettings(env));
  if (enabled !== true) return null;
  const file = qwenTrustedFolders(env);
  const rules = readSettings(file);
  if ("error" in rules) return `${rules.error}: Qwen Code refuses to start`;
  const here = real(folder);
  let best: { depth: number; level: unknown } | null = null;
  for (const [rule, level] of Object.entries(rules.settings)) {
    if (level !== "TRUST_FOLDER" && level !== "TRUST_PARENT" && level !== "DO_NOT_TRUST") continue;
    const depth = depthOf(level === "TRUST_PARENT" ? path.dirname(rule) : rule, here);
    if (depth < 0) continue;
    if (best === null || depth > best.depth || (depth === best.depth && level === "DO_NOT_TRUST"))
      best = { depth, level };
  }
  if (best !== null && best.level !== "DO_NOT_TRUST") return null;
  const why =
    best?.level === "DO_NOT_TRUST" ? `${file} says DO_NOT_TRUST for it` : `no rule in ${file} trusts it`;
  return `Qwen Code does not trust ${here} (folder trust is on and ${why}), so it skips the project's settings and their hooks silently: trust it (add "${here}": "TRUST_FOLDER" to ${file}), or write the hooks to the user settings (${qwenUserSettings(env)})`;
}

/** Where hooks are switched off for every Qwen Code session started here, or null. */
export function qwenHooksOff(files: readonly string[], env: NodeJS.ProcessEnv): string | null {
  const safe = env["QWEN_CODE_SAFE_MODE"];
  if (safe !== undefined && safe !== "" && safe !== "0" && safe.toLowerCase() !== "false")
    return "QWEN_CODE_SAFE_MODE is set, so Qwen Code runs none of its hooks";
  for (const f of files) {
    const r = readSettings(f);
    if ("settings" in r && r.settings["disableAllHooks"] === true)
      return `${f} sets disableAllHooks, so Qwen Code runs none of its hooks`;
  }
  return null;
}
