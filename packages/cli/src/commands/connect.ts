import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "@geode/bus";
import type { CommandModule } from "../command.js";
import { claudeCodeHooks, mergeHooks, TOKEN_ENV } from "../connect/claude-code-settings.js";
import { writeMergedJson } from "../connect/config-file.js";
import { parseConnectArgs } from "../connect/connect-args.js";
import { shellQuote } from "../connect/hook-command.js";

/** The command that runs this CLI's hook shim (this Node, this checkout's `geode`) for `agent`. */
export function shimCommand(hookUrl: string, failClosed: boolean, agent?: string): string {
  const bin = path.resolve(import.meta.dirname, "../../bin/geode.mjs");
  return [process.execPath, bin, "hook-shim", ...(agent ? ["--agent", agent] : []), "--url", hookUrl]
    .map(shellQuote)
    .concat(failClosed ? ["--fail-closed"] : [])
    .join(" ");
}

/**
 * `geode connect claude-code`: prints the Claude Code `hooks` settings that send every mapped
 * event to the agent gateway, or merges them into a settings file (keeping the hooks there).
 */
export const connectClaudeCodeCommand: CommandModule = {
  async run(args, io) {
    const { values, endpoint: hookUrl } = parseConnectArgs(args, io.env, "claude-code", {});
    const failClosed = values["fail-closed"] === true;
    const hooks = claudeCodeHooks({
      hookUrl,
      shimCommand: shimCommand(hookUrl, failClosed),
      approvalTimeoutMs: loadConfig(io.env).approvalTimeoutMs,
      failClosed,
    });
    if (values.write === undefined) {
      io.out(`${JSON.stringify({ hooks }, null, 2)}\n`);
      return 0;
    }
    const file = path.resolve(values.write);
    let current: unknown = {};
    if (existsSync(file)) {
      const text = readFileSync(file, "utf8");
      try {
        current = text.trim() === "" ? {} : (JSON.parse(text) as unknown);
      } catch {
        io.err(`${file} is not valid JSON; nothing written\n`);
        return 1;
      }
    }
    if (!writeMergedJson(file, io, () => mergeHooks(current, hooks))) return 1;
    io.out(
      `wrote the hooks of ${Object.keys(hooks).length} Claude Code events to ${file} (gateway ${hookUrl}).\n` +
        `Claude Code reads the agent token from ${TOKEN_ENV}.\n`,
    );
    return 0;
  },
};
