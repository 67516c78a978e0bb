import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CLAUDE_CODE_EVENTS } from "@geode/contracts";
import { loadConfig } from "@geode/service";
import type { CommandIO, CommandModule } from "../command.js";
import {
  claudeCodeHooks,
  entryFailMode,
  isOurs,
  mergeHooks,
  TOKEN_ENV,
} from "../connect/claude-code-settings.js";
import { writeMergedJson } from "../connect/config-file.js";
import { parseConnectArgs } from "../connect/connect-args.js";
import { guardedModes, nestedHooksOf, printedLine, wroteLine } from "../connect/fail-mode.js";
import { type AgentCheck, reportCheck } from "../connect/gateway-check.js";
import { shellQuote } from "../connect/hook-command.js";
import { hooksNotRun } from "../connect/hooks-not-run.js";

/** The command that runs this CLI's hook shim (this Node, this checkout's `geode`) for `agent`. */
export function shimCommand(hookUrl: string, failClosed: boolean, agent?: string): string {
  const bin = path.resolve(import.meta.dirname, "../../bin/geode.mjs");
  return [process.execPath, bin, "hook-shim", ...(agent ? ["--agent", agent] : []), "--url", hookUrl]
    .map(shellQuote)
    .concat(failClosed ? ["--fail-closed"] : [])
    .join(" ");
}

/** A settings file as Claude Code reads it: its object ({} when absent), or why it cannot be read. */
function readClaudeSettings(file: string): { settings: unknown } | { error: string } {
  if (!existsSync(file)) return { settings: {} };
  const text = readFileSync(file, "utf8");
  try {
    return { settings: text.trim() === "" ? {} : (JSON.parse(text) as unknown) };
  } catch {
    return { error: `${file} is not valid JSON` };
  }
}

/** The settings files besides `file` that Claude Code reads here: the user's and the project's. */
function settingsHere(file: string, env: NodeJS.ProcessEnv): string[] {
  const user = path.join(env["HOME"] || os.homedir(), ".claude", "settings.json");
  const project = path.join(process.cwd(), ".claude");
  return [
    ...new Set([file, user, path.join(project, "settings.json"), path.join(project, "settings.local.json")]),
  ];
}

/** The settings file among `files` that turns every hook off (`disableAllHooks: true`), or null. */
function hooksDisabledIn(files: readonly string[]): string | null {
  for (const f of files) {
    const r = readClaudeSettings(f);
    if ("settings" in r && (r.settings as { disableAllHooks?: unknown } | null)?.disableAllHooks === true)
      return f;
  }
  return null;
}

/**
 * The Claude Code side of `--check`: geode's hooks in the settings Claude Code reads here (the
 * `--write` file, the user's, the project's), those files JSON, hooks not turned off.
 */
function claudeCodeSide(file: string, io: CommandIO): AgentCheck {
  const files = settingsHere(file, io.env);
  const hooksOf: unknown[] = [];
  for (const f of files) {
    const r = readClaudeSettings(f);
    if ("error" in r) return { problem: `${r.error}: Claude Code ignores it` };
    hooksOf.push((r.settings as { hooks?: unknown } | null)?.hooks);
  }
  const disabled = hooksDisabledIn(files);
  if (disabled) return { problem: `${disabled} sets disableAllHooks: Claude Code runs no hook` };
  const entries = (event: string) => hooksOf.flatMap((hooks) => nestedHooksOf(hooks, event));
  const count = CLAUDE_CODE_EVENTS.flatMap((e) => entries(e.event)).filter(isOurs).length;
  if (count === 0)
    return {
      problem: `no geode hooks in ${files.join(" or ")}: run geode connect claude-code --write ${file}`,
    };
  return {
    ok: `${count} hooks in the settings Claude Code reads here`,
    modes: guardedModes(CLAUDE_CODE_EVENTS, entries, entryFailMode),
  };
}

/**
 * `geode connect claude-code`: prints the Claude Code `hooks` settings that send every mapped
 * event to the agent gateway, or merges them into a settings file (keeping the hooks there);
 * `--check` proves Claude Code will run them.
 */
export const connectClaudeCodeCommand: CommandModule = {
  async run(args, io) {
    const {
      values,
      endpoint: hookUrl,
      failClosed,
    } = parseConnectArgs(args, io.env, "claude-code", {
      check: { type: "boolean", default: false },
    });
    const file = path.resolve(
      values.write ?? path.join(io.env["HOME"] || os.homedir(), ".claude", "settings.json"),
    );
    if (values.check) return reportCheck(hookUrl, io, claudeCodeSide(file, io));
    const hooks = claudeCodeHooks({
      hookUrl,
      shimCommand: shimCommand(hookUrl, failClosed),
      approvalTimeoutMs: loadConfig(io.env).approvalTimeoutMs,
      failClosed,
    });
    if (values.write === undefined) {
      io.err(printedLine(failClosed));
      io.out(`${JSON.stringify({ hooks }, null, 2)}\n`);
      return 0;
    }
    const current = readClaudeSettings(file);
    if ("error" in current) {
      io.err(`${current.error}; nothing written\n`);
      return 1;
    }
    if (!writeMergedJson(file, io, () => mergeHooks(current.settings, hooks))) return 1;
    const count = Object.keys(hooks).length;
    io.out(
      `${wroteLine({ failClosed, count, agent: "Claude Code", file, endpoint: hookUrl })}Claude Code reads the agent token from ${TOKEN_ENV}.\n`,
    );
    const disabled = hooksDisabledIn(settingsHere(file, io.env));
    if (disabled) return hooksNotRun(io, "Claude Code", `${disabled} sets disableAllHooks`);
    return 0;
  },
};
