import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { COPILOT_EVENTS } from "@geode/contracts";
import { loadConfig } from "@geode/service";
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
import { guardedModes, type HookMode, printedLine, wroteLine } from "../connect/fail-mode.js";
import { type AgentCheck, reportCheck } from "../connect/gateway-check.js";
import { commandFailMode, isGeodeHookCommand, TOKEN_ENV } from "../connect/hook-command.js";
import { hooksNotRun } from "../connect/hooks-not-run.js";
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
  // A Map: an event key such as `__proto__` in the file stays a key, never the object's prototype.
  const hooks = new Map<string, CopilotHooksFile["hooks"][string]>();
  for (const [event, entries] of Object.entries(c.hooks ?? {}))
    hooks.set(
      event,
      (Array.isArray(entries) ? entries : []).filter((h) => !isGeodeHookCommand(h?.bash)),
    );
  for (const [event, entries] of Object.entries(ours.hooks))
    hooks.set(event, [...(hooks.get(event) ?? []), ...entries]);
  return { ...c, version: 1, hooks: Object.fromEntries(hooks) };
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
    `${wroteLine({ failClosed: o.failClosed, count: Object.keys(hooks.hooks).length, agent: "Copilot CLI", file: o.file, endpoint: o.endpoint })}Copilot reads the agent token from ${TOKEN_ENV}.\n`,
  );
  const disabled = hooksDisabledBy(io.env);
  if (disabled) return hooksNotRun(io, "Copilot CLI", `${disabled} sets disableAllHooks`);
  // A repository hooks file (`<folder>/.github/hooks/*.json`) loads only where Copilot trusts the folder.
  const hooksDir = path.dirname(o.file);
  const folder = path.dirname(path.dirname(hooksDir));
  if (path.basename(hooksDir) === "hooks" && path.basename(path.dirname(hooksDir)) === ".github")
    if (!folderTrusted(folder, io.env))
      return hooksNotRun(
        io,
        "Copilot CLI",
        `${o.file} is a repository hook and Copilot does not trust ${folder}, so it skips it silently: trust the folder in Copilot, or write user-level hooks (geode connect copilot --write ${userHooksFile(io.env)})`,
      );
  return 0;
}

/** The fail modes of the guarded hooks in a Copilot hooks file's text (checked valid before). */
function copilotModes(text: string): HookMode[] {
  const hooks = (JSON.parse(text.replace(/^\s*\/\/.*$/gm, "")) as Partial<CopilotHooksFile>).hooks ?? {};
  return guardedModes(
    COPILOT_EVENTS,
    (event) => (Object.hasOwn(hooks, event) && Array.isArray(hooks[event]) ? hooks[event] : []),
    (h) => commandFailMode((h as { bash?: unknown } | null)?.bash),
  );
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
  let file = o.file;
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
    file = repo[0] as string;
    const problem = hooksFileProblem(file, o.endpoint);
    if (problem) return fail(problem);
    where = `${file} (trusted folder)`;
  }
  return { ok: `Copilot loads the hooks in ${where}`, modes: copilotModes(readFileSync(file, "utf8")) };
}

/**
 * `geode connect copilot`: prints (or `--write`s, by default into `~/.copilot/hooks/geode.json`,
 * which Copilot always loads) the native hooks that send every Copilot CLI event to the agent
 * gateway; `--check` proves Copilot will run them.
 */
export const connectCopilotCommand: CommandModule = {
  async run(args, io) {
    const { values, endpoint, failClosed } = parseConnectArgs(args, io.env, "copilot", {
      check: { type: "boolean", default: false },
      print: { type: "boolean", default: false },
    });
    const o: Options = {
      endpoint,
      file: path.resolve(values.write ?? userHooksFile(io.env)),
      failClosed,
    };
    if (values.check) return reportCheck(endpoint, io, copilotSide(o, io));
    const hooks = copilotHooks({
      endpoint,
      approvalTimeoutMs: loadConfig(io.env).approvalTimeoutMs,
      failClosed: o.failClosed,
      shim: (url) => shimCommand(url, false, "copilot"),
    });
    if (values.print) {
      io.err(printedLine(failClosed));
      io.out(`${JSON.stringify(hooks, null, 2)}\n`);
      return 0;
    }
    return write(o, hooks, io);
  },
};
