import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "@geode/bus";
import type { CommandIO, CommandModule } from "../command.js";
import { writeMergedJson } from "../connect/config-file.js";
import { parseConnectArgs } from "../connect/connect-args.js";
import {
  type CopilotHooksFile,
  copilotHooks,
  folderTrusted,
  hooksDisabledBy,
  hooksFileProblem,
  repositoryHooks,
  userHooksFile,
} from "../connect/copilot-hooks.js";
import { type AgentCheck, reportCheck } from "../connect/gateway-check.js";
import { isGeodeHookCommand, TOKEN_ENV } from "../connect/hook-command.js";
import { shimCommand } from "./connect.js";

interface Options {
  endpoint: string;
  file: string;
  failClosed: boolean;
}

/** `current` with geode's hooks replaced by `ours` (the other hooks in the file kept). */
function merge(current: unknown, ours: CopilotHooksFile): CopilotHooksFile {
  const c = (current ?? {}) as Partial<CopilotHooksFile>;
  if (typeof c !== "object" || Array.isArray(c) || (c.hooks !== undefined && typeof c.hooks !== "object"))
    throw new Error("not a Copilot hooks file");
  const hooks: CopilotHooksFile["hooks"] = {};
  for (const [event, entries] of Object.entries(c.hooks ?? {}))
    hooks[event] = (Array.isArray(entries) ? entries : []).filter((h) => !isGeodeHookCommand(h?.bash));
  for (const [event, entries] of Object.entries(ours.hooks))
    hooks[event] = [...(hooks[event] ?? []), ...entries];
  return { ...c, version: 1, hooks };
}

function write(o: Options, hooks: CopilotHooksFile, io: CommandIO): number {
  let current: unknown = {};
  if (existsSync(o.file)) {
    try {
      const text = readFileSync(o.file, "utf8");
      current = text.trim() === "" ? {} : JSON.parse(text);
    } catch {
      io.err(`${o.file} is not valid JSON; nothing written\n`);
      return 1;
    }
  }
  if (!writeMergedJson(o.file, io, () => merge(current, hooks))) return 1;
  io.out(
    `wrote the hooks of ${Object.keys(hooks.hooks).length} Copilot CLI events to ${o.file} (gateway ${o.endpoint}).\n` +
      `Copilot reads the agent token from ${TOKEN_ENV}.\n`,
  );
  return 0;
}

/**
 * The Copilot side of `--check`: the hooks where Copilot loads them (a user-level file, always
 * loaded; else repository hooks in a folder Copilot trusts) and hooks not turned off.
 */
function copilotSide(o: Options, io: CommandIO): AgentCheck {
  const fail = (problem: string) => ({ problem });
  const disabled = hooksDisabledBy(io.env);
  if (disabled) return fail(`${disabled} sets disableAllHooks: Copilot runs no hook`);
  let where: string;
  if (existsSync(o.file)) {
    const problem = hooksFileProblem(o.file, o.endpoint);
    if (problem) return fail(problem);
    where = o.file;
  } else {
    const cwd = process.cwd();
    const repo = repositoryHooks(cwd, o.endpoint);
    if (repo.length === 0)
      return fail(
        `no geode hooks in ${o.file} or ${path.join(cwd, ".github", "hooks")}: run geode connect copilot --write ${o.file}`,
      );
    if (!folderTrusted(cwd, io.env))
      return fail(
        `${repo[0]} is a repository hook and Copilot does not trust ${cwd}, so it skips it silently: trust the folder in Copilot, or write user-level hooks (geode connect copilot)`,
      );
    const problem = hooksFileProblem(repo[0] as string, o.endpoint);
    if (problem) return fail(problem);
    where = `${repo[0]} (trusted folder)`;
  }
  return { ok: `Copilot loads the hooks in ${where}` };
}

/**
 * `geode connect copilot`: prints (or `--write`s, by default into `~/.copilot/hooks/geode.json`,
 * which Copilot always loads) the native hooks that send every Copilot CLI event to the agent
 * gateway; `--check` proves Copilot will run them.
 */
export const connectCopilotCommand: CommandModule = {
  async run(args, io) {
    const { values, endpoint } = parseConnectArgs(args, io.env, "copilot", {
      check: { type: "boolean", default: false },
      print: { type: "boolean", default: false },
    });
    const o: Options = {
      endpoint,
      file: path.resolve(values.write ?? userHooksFile(io.env)),
      failClosed: values["fail-closed"] === true,
    };
    if (values.check) return reportCheck(endpoint, io, copilotSide(o, io));
    const hooks = copilotHooks({
      endpoint,
      approvalTimeoutMs: loadConfig(io.env).approvalTimeoutMs,
      failClosed: o.failClosed,
      shim: (url) => shimCommand(url, false, "copilot"),
    });
    if (values.print) {
      io.out(`${JSON.stringify(hooks, null, 2)}\n`);
      return 0;
    }
    return write(o, hooks, io);
  },
};
