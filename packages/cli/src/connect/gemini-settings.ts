import { existsSync, readFileSync, realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { GEMINI_CLI_EVENTS } from "@geode/contracts";
import type { HooksBlock } from "./claude-code-settings.js";
import { agentHookCommand, hookTimeoutSeconds } from "./hook-command.js";

/** The name geode's hooks carry in Gemini's settings (its logs and `/hooks` show it). */
export const GEMINI_HOOK_NAME = "geode";

export interface GeminiHooksOptions {
  /** The gateway's Gemini CLI endpoint (`…/v1/gemini-cli/hook`). */
  endpoint: string;
  /** The approval timeout the gateway waits for a human (the tool hooks must wait longer). */
  approvalTimeoutMs: number;
  /** Guarded events (prompts, tool calls) refuse when the gateway cannot answer. */
  failClosed: boolean;
}

/**
 * The `hooks` block that sends every Gemini CLI event connect writes to the agent gateway: a
 * command hook (Gemini discards any other type) running the gateway's curl command, fail-closed
 * where the event guards, its timeout in milliseconds as Gemini reads it.
 */
export function geminiHooks(options: GeminiHooksOptions): HooksBlock {
  const hooks: HooksBlock = {};
  for (const e of GEMINI_CLI_EVENTS) {
    if (!e.connect) continue;
    const seconds = hookTimeoutSeconds(
      e.event === "AfterAgent" ? "stop" : e.tool ? "tool" : "other",
      options.approvalTimeoutMs,
    );
    const command = agentHookCommand(options.endpoint, options.failClosed && e.guards, seconds);
    const entry = { name: GEMINI_HOOK_NAME, type: "command", command, timeout: seconds * 1000 };
    hooks[e.event] = [{ ...(e.tool ? { matcher: "*" } : {}), hooks: [entry] }];
  }
  return hooks;
}

/** Gemini's user settings: `~/.gemini/settings.json`. */
export function geminiUserSettings(env: NodeJS.ProcessEnv): string {
  return path.join(env["HOME"] || os.homedir(), ".gemini", "settings.json");
}

/** Gemini's system settings: `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, else `/etc/gemini-cli/settings.json`. */
export function geminiSystemSettings(env: NodeJS.ProcessEnv): string {
  return env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] || "/etc/gemini-cli/settings.json";
}

/** Gemini's trusted folders: `GEMINI_CLI_TRUSTED_FOLDERS_PATH`, else `~/.gemini/trustedFolders.json`. */
function geminiTrustedFolders(env: NodeJS.ProcessEnv): string {
  return (
    env["GEMINI_CLI_TRUSTED_FOLDERS_PATH"] ||
    path.join(env["HOME"] || os.homedir(), ".gemini", "trustedFolders.json")
  );
}

/** A settings file as Gemini reads it (JSON with comments): its object, or an error message. */
export function readSettings(file: string): { settings: Record<string, unknown> } | { error: string } {
  if (!existsSync(file)) return { settings: {} };
  const text = readFileSync(file, "utf8");
  try {
    const parsed = text.trim() === "" ? {} : (JSON.parse(stripJsonComments(text)) as unknown);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
      return { error: `${file} does not hold a JSON object` };
    return { settings: parsed as Record<string, unknown> };
  } catch (err) {
    return { error: `${file} is not valid JSON (${err instanceof Error ? err.message : err})` };
  }
}

/** `//` and `/* *\/` comments removed outside strings (Gemini reads its settings that way). */
function stripJsonComments(text: string): string {
  return text.replace(/("(?:\\.|[^"\\])*")|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (m, str: string | undefined) =>
    str === undefined ? "" : m,
  );
}

const real = (p: string) => {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
};
const within = (parent: string, child: string) => {
  const rel = path.relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
};

/**
 * Whether Gemini CLI trusts `folder` (0.61.0's rules): `GEMINI_CLI_TRUST_WORKSPACE` decides when
 * set; folder trust switched off (`security.folderTrust.enabled: false`) trusts everything; else
 * the longest rule of `trustedFolders.json` that holds the folder (`TRUST_FOLDER`, `TRUST_PARENT`
 * of its parent, `DO_NOT_TRUST`). Null when trusted, else why not.
 */
export function geminiTrustProblem(
  folder: string,
  env: NodeJS.ProcessEnv,
  settings: ReadonlyArray<Record<string, unknown>>,
): string | null {
  const forced = env["GEMINI_CLI_TRUST_WORKSPACE"];
  if (forced === "true") return null;
  if (forced === "false" || env["GEMINI_RESTRICTED_MODE"] === "true")
    return "GEMINI_CLI_TRUST_WORKSPACE=false (or GEMINI_RESTRICTED_MODE) makes every folder untrusted";
  const enabled = settings.map(
    (s) =>
      ((s["security"] as Record<string, unknown> | undefined)?.["folderTrust"] as { enabled?: unknown })
        ?.enabled,
  );
  if (enabled.some((v) => v === false) && !enabled.some((v) => v === true)) return null;
  const file = geminiTrustedFolders(env);
  const rules = readSettings(file);
  if ("error" in rules) return `${rules.error}: Gemini CLI refuses to start`;
  const here = real(folder);
  let best: { length: number; level: unknown } | null = null;
  for (const [rule, level] of Object.entries(rules.settings)) {
    const effective = level === "TRUST_PARENT" ? path.dirname(rule) : rule;
    if (within(real(effective), here) && (best === null || rule.length > best.length))
      best = { length: rule.length, level };
  }
  if (best?.level === "TRUST_FOLDER" || best?.level === "TRUST_PARENT") return null;
  const why =
    best?.level === "DO_NOT_TRUST" ? `${file} says DO_NOT_TRUST for it` : `no rule in ${file} trusts it`;
  return `Gemini CLI does not trust ${here} (${why}), so it registers no hooks there and refuses to run headless: trust it (run gemini there once and choose trust, or add "${here}": "TRUST_FOLDER" to ${file}), or set GEMINI_CLI_TRUST_WORKSPACE=true`;
}
