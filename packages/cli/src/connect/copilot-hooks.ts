import { existsSync, readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { COPILOT_EVENT_PARAM, COPILOT_EVENTS, copilotRefusal } from "@geode/contracts";
import { hookCommand, hookTimeoutSeconds } from "./hook-command.js";

/** One hook entry as Copilot CLI reads it in a native (camelCase) hooks file. */
interface CopilotHookEntry {
  type: "command";
  bash: string;
  timeoutSec: number;
}

/** A Copilot CLI hooks file (`~/.copilot/hooks/*.json`, `.github/hooks/*.json`). */
export interface CopilotHooksFile {
  version: 1;
  hooks: Record<string, CopilotHookEntry[]>;
}

export interface CopilotHooksOptions {
  /** The gateway's Copilot endpoint (`…/v1/copilot/hook`). */
  endpoint: string;
  /** The approval timeout the gateway waits for a human (the tool hooks must wait longer). */
  approvalTimeoutMs: number;
  /** Guarded events (prompts, tool calls, permission prompts) refuse when the gateway cannot answer. */
  failClosed: boolean;
  /** The command that runs `geode hook-shim --agent copilot --url <url>` (agentStop's hook). */
  shim: (url: string) => string;
}

/** The endpoint with the event named (Copilot's native input names none). */
export function eventUrl(endpoint: string, event: string): string {
  const url = new URL(endpoint);
  url.searchParams.set(COPILOT_EVENT_PARAM, event);
  return url.toString();
}

/**
 * The hooks file `geode connect copilot` writes: every Copilot event, native camelCase keys. Each
 * hook is one `curl` to the event's URL; a Copilot timeout, empty output or non-JSON output fails
 * open, so curl gives up 5 s before Copilot would, and the command itself answers: for a guarded
 * event of a fail-closed set-up the event's refusal JSON and exit 2 (Copilot reads exit 2 alone as
 * a refusal of a tool call, not of a prompt), else exit 0 with nothing printed (Copilot reads exit
 * 1 as a refusal too). agentStop runs the hook shim, which adds the answer text from
 * Copilot's transcript (Copilot's input has none) for the verifier.
 */
export function copilotHooks(options: CopilotHooksOptions): CopilotHooksFile {
  const hooks: Record<string, CopilotHookEntry[]> = {};
  for (const e of COPILOT_EVENTS) {
    const seconds = hookTimeoutSeconds(
      e.event === "agentStop" ? "stop" : e.tool ? "tool" : "other",
      options.approvalTimeoutMs,
    );
    const url = eventUrl(options.endpoint, e.event);
    const bash =
      e.event === "agentStop"
        ? options.shim(url)
        : hookCommand({
            endpoint: url,
            failClosed: options.failClosed && e.guards,
            timeoutSeconds: seconds,
            openExit: 0,
            refusal: (reason) => JSON.stringify(copilotRefusal(e.event, reason)),
          });
    hooks[e.event] = [{ type: "command", bash, timeoutSec: seconds + 5 }];
  }
  return { version: 1, hooks };
}

/** Copilot CLI's own folder: `$COPILOT_HOME`, else `~/.copilot`. */
function copilotHome(env: NodeJS.ProcessEnv): string {
  return env["COPILOT_HOME"] || path.join(env["HOME"] || os.homedir(), ".copilot");
}

/** Where `geode connect copilot` writes by default: a user-level hooks file, which Copilot always loads. */
export const userHooksFile = (env: NodeJS.ProcessEnv): string =>
  path.join(copilotHome(env), "hooks", "geode.json");

const readJson = (file: string): unknown => {
  // Copilot's config.json starts with `//` comment lines.
  const text = readFileSync(file, "utf8").replace(/^\s*\/\/.*$/gm, "");
  return JSON.parse(text);
};

/**
 * What is wrong with a hooks file for `endpoint`, or null: it must be JSON, `version` 1, and give
 * every Copilot event a command that calls the gateway at that event's URL.
 */
export function hooksFileProblem(file: string, endpoint: string): string | null {
  let parsed: unknown;
  try {
    parsed = readJson(file);
  } catch (err) {
    return `${file} is not valid JSON, so Copilot loads none of it: ${err instanceof Error ? err.message : err}`;
  }
  const f = parsed as Partial<CopilotHooksFile> | null;
  if (f?.version !== 1 || f.hooks === null || typeof f.hooks !== "object")
    return `${file} is not a Copilot hooks file (it needs "version": 1 and "hooks")`;
  const missing = COPILOT_EVENTS.find(
    (e) => !f.hooks?.[e.event]?.some((h) => h.bash?.includes(eventUrl(endpoint, e.event))),
  );
  return missing
    ? `${file} has no hook that sends ${missing.event} to ${endpoint}: run geode connect copilot --write ${file}`
    : null;
}

/** The repository hooks files of `cwd` (`.github/hooks/*.json`) that call `endpoint`. */
export function repositoryHooks(cwd: string, endpoint: string): string[] {
  const dir = path.join(cwd, ".github", "hooks");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => path.join(dir, f))
    .filter((f) => readFileSync(f, "utf8").includes(new URL(endpoint).pathname));
}

/** Whether Copilot trusts `cwd` (its `trustedFolders` in config.json list it or a folder above it). */
export function folderTrusted(cwd: string, env: NodeJS.ProcessEnv): boolean {
  if (env["COPILOT_ALLOW_ALL"] === "true") return true;
  const config = path.join(copilotHome(env), "config.json");
  if (!existsSync(config)) return false;
  let folders: unknown;
  try {
    folders = (readJson(config) as { trustedFolders?: unknown }).trustedFolders;
  } catch {
    return false;
  }
  if (!Array.isArray(folders)) return false;
  const here = path.resolve(cwd);
  return folders.some(
    (f) =>
      typeof f === "string" && (here === path.resolve(f) || here.startsWith(`${path.resolve(f)}${path.sep}`)),
  );
}

/** The settings file that turns every hook off (`disableAllHooks: true`), or null. */
export function hooksDisabledBy(env: NodeJS.ProcessEnv): string | null {
  for (const name of ["settings.json", "config.json"]) {
    const file = path.join(copilotHome(env), name);
    try {
      if (existsSync(file) && (readJson(file) as { disableAllHooks?: unknown }).disableAllHooks === true)
        return file;
    } catch {
      // an unreadable file turns nothing off
    }
  }
  return null;
}
