import path from "node:path";
import { QWEN_CODE_EVENTS } from "@geode/contracts";
import { loadConfig } from "@geode/service";
import type { CommandIO, CommandModule } from "../command.js";
import { mergeHooks } from "../connect/claude-code-settings.js";
import { writeMergedJson } from "../connect/config-file.js";
import { parseConnectArgs } from "../connect/connect-args.js";
import { guardedModes, nestedHooksOf, printedLine, wroteLine } from "../connect/fail-mode.js";
import { type AgentCheck, reportCheck } from "../connect/gateway-check.js";
import { readSettings } from "../connect/gemini-settings.js";
import { TOKEN_ENV } from "../connect/hook-command.js";
import { hooksNotRun } from "../connect/hooks-not-run.js";
import {
  isOurQwenHook,
  qwenCodeHooks,
  qwenHookFailMode,
  qwenHooksOff,
  qwenProjectSettings,
  qwenSystemSettings,
  qwenTrustProblem,
  qwenUserSettings,
} from "../connect/qwen-code-settings.js";

interface Options {
  endpoint: string;
  /** The settings file to write (with --check: one more file to look in, when --write names it). */
  file: string;
  failClosed: boolean;
}

/** The folder whose project settings `file` is (`<folder>/.qwen/settings.json`), or null. */
function projectOf(file: string, env: NodeJS.ProcessEnv): string | null {
  if (file === qwenUserSettings(env) || file === qwenSystemSettings(env)) return null;
  const dir = path.dirname(file);
  return path.basename(file) === "settings.json" && path.basename(dir) === ".qwen" ? path.dirname(dir) : null;
}

/**
 * The settings files Qwen Code reads for a session started here (the user's, the system's, and
 * the current folder's project settings when it trusts the folder), plus `extra` when given.
 */
function settingsRead(env: NodeJS.ProcessEnv, extra?: string): string[] {
  const project = qwenTrustProblem(process.cwd(), env) === null ? [qwenProjectSettings(process.cwd())] : [];
  return [
    ...new Set([qwenUserSettings(env), qwenSystemSettings(env), ...project, ...(extra ? [extra] : [])]),
  ];
}

async function write(o: Options, io: CommandIO): Promise<number> {
  const hooks = qwenCodeHooks({
    endpoint: o.endpoint,
    approvalTimeoutMs: loadConfig(io.env).approvalTimeoutMs,
    failClosed: o.failClosed,
  });
  const current = readSettings(o.file);
  if ("error" in current) {
    io.err(`${current.error}; nothing written\n`);
    return 1;
  }
  if (!writeMergedJson(o.file, io, () => mergeHooks(current.settings, hooks, isOurQwenHook))) return 1;
  io.out(
    `${wroteLine({ failClosed: o.failClosed, count: Object.keys(hooks).length, agent: "Qwen Code", file: o.file, endpoint: o.endpoint })}Qwen Code reads the agent token from ${TOKEN_ENV}.\n`,
  );
  const off = qwenHooksOff(settingsRead(io.env, o.file), io.env);
  if (off !== null) return hooksNotRun(io, "Qwen Code", off);
  const project = projectOf(o.file, io.env);
  const untrusted = project === null ? null : qwenTrustProblem(project, io.env);
  if (untrusted !== null) return hooksNotRun(io, "Qwen Code", untrusted);
  return 0;
}

/**
 * The Qwen Code side of `--check`: geode's hooks in the settings Qwen Code reads here, none of them
 * switching hooks off, and, for hooks only in the project's settings, the folder trusted.
 */
function qwenSide(o: Options, written: boolean, io: CommandIO): AgentCheck {
  const files = settingsRead(io.env, written ? o.file : undefined);
  const hooksOf: unknown[] = [];
  for (const f of files) {
    const r = readSettings(f);
    if ("error" in r) return { problem: `${r.error}: Qwen Code refuses to start` };
    hooksOf.push(r.settings["hooks"]);
  }
  const off = qwenHooksOff(files, io.env);
  if (off !== null) return { problem: off };
  const entries = (event: string) => hooksOf.flatMap((hooks) => nestedHooksOf(hooks, event));
  const count = QWEN_CODE_EVENTS.flatMap((e) => entries(e.event)).filter(isOurQwenHook).length;
  if (count === 0) {
    // Hooks in a project Qwen Code does not trust: the silent case, named as such.
    const untrusted = qwenTrustProblem(process.cwd(), io.env);
    const project = readSettings(qwenProjectSettings(process.cwd()));
    const inProject =
      "settings" in project &&
      QWEN_CODE_EVENTS.some((e) => nestedHooksOf(project.settings["hooks"], e.event).some(isOurQwenHook));
    if (untrusted !== null && inProject) return { problem: untrusted };
    return {
      problem: `no geode hooks in ${files.join(" or ")}: run geode connect qwen-code --write ${qwenUserSettings(io.env)}`,
    };
  }
  return {
    ok: `${count} hooks in the settings Qwen Code reads here`,
    modes: guardedModes(QWEN_CODE_EVENTS, entries, qwenHookFailMode),
  };
}

/**
 * `geode connect qwen-code`: prints (or `--write`s into a Qwen Code settings file, merged;
 * `--system` into its system settings) the hooks that send every mapped Qwen Code event to the
 * agent gateway, and says when Qwen Code would not run them; `--check` proves it will.
 */
export const connectQwenCodeCommand: CommandModule = {
  async run(args, io) {
    const { values, endpoint, failClosed } = parseConnectArgs(args, io.env, "qwen-code", {
      system: { type: "boolean", default: false },
      check: { type: "boolean", default: false },
    });
    const system = values.system === true;
    const o: Options = {
      endpoint,
      file: path.resolve(values.write ?? (system ? qwenSystemSettings(io.env) : qwenUserSettings(io.env))),
      failClosed,
    };
    if (values.check) return reportCheck(endpoint, io, qwenSide(o, values.write !== undefined, io));
    if (values.write === undefined && !system) {
      const hooks = qwenCodeHooks({
        endpoint,
        approvalTimeoutMs: loadConfig(io.env).approvalTimeoutMs,
        failClosed,
      });
      io.err(printedLine(failClosed));
      io.out(`${JSON.stringify({ hooks }, null, 2)}\n`);
      return 0;
    }
    return write(o, io);
  },
};
