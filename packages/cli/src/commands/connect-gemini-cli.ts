import path from "node:path";
import { GEMINI_CLI_EVENTS } from "@geode/contracts";
import { loadConfig } from "@geode/service";
import type { CommandIO, CommandModule } from "../command.js";
import { mergeHooks } from "../connect/claude-code-settings.js";
import { writeMergedJson } from "../connect/config-file.js";
import { parseConnectArgs } from "../connect/connect-args.js";
import { guardedModes, type HookMode, nestedHooksOf, printedLine, wroteLine } from "../connect/fail-mode.js";
import { type AgentCheck, reportCheck } from "../connect/gateway-check.js";
import {
  GEMINI_HOOK_NAME,
  geminiHooks,
  geminiSystemSettings,
  geminiTrustProblem,
  geminiUserSettings,
  readSettings,
} from "../connect/gemini-settings.js";
import { isGeodeHookCommand, TOKEN_ENV } from "../connect/hook-command.js";
import { hooksNotRun } from "../connect/hooks-not-run.js";

interface Options {
  endpoint: string;
  /** The settings file to write (or, with --check, the first one looked at). */
  file: string;
  failClosed: boolean;
}

/** The settings objects Gemini reads here (user and system), those that exist and parse. */
function settingsHere(io: CommandIO): Array<Record<string, unknown>> {
  return [geminiUserSettings(io.env), geminiSystemSettings(io.env)].flatMap((f) => {
    const r = readSettings(f);
    return "settings" in r ? [r.settings] : [];
  });
}

async function write(o: Options, io: CommandIO): Promise<number> {
  const hooks = geminiHooks({
    endpoint: o.endpoint,
    approvalTimeoutMs: loadConfig(io.env).approvalTimeoutMs,
    failClosed: o.failClosed,
  });
  const current = readSettings(o.file);
  if ("error" in current) {
    io.err(`${current.error}; nothing written\n`);
    return 1;
  }
  if (!writeMergedJson(o.file, io, () => mergeHooks(current.settings, hooks))) return 1;
  io.out(
    `${wroteLine({ failClosed: o.failClosed, count: Object.keys(hooks).length, agent: "Gemini CLI", file: o.file, endpoint: o.endpoint })}Gemini CLI reads the agent token from ${TOKEN_ENV}.\n`,
  );
  const off = hooksSwitchedOff(o.file, io);
  if (off !== null) return hooksNotRun(io, "Gemini CLI", off);
  const untrusted = geminiTrustProblem(process.cwd(), io.env, settingsHere(io));
  if (untrusted !== null) return hooksNotRun(io, "Gemini CLI", `here: ${untrusted}`);
  return 0;
}

/** Where a settings file Gemini reads here switches hooks off, or null. */
function hooksSwitchedOff(file: string, io: CommandIO): string | null {
  for (const f of new Set([file, geminiUserSettings(io.env), geminiSystemSettings(io.env)])) {
    const r = readSettings(f);
    const off = "settings" in r ? geodeHooksIn(r.settings).off : null;
    if (off !== null) return `${f}: ${off}, so Gemini CLI runs none of its hooks`;
  }
  return null;
}

/**
 * Hooks of the gateway in a settings object: how many, their fail modes, and whether hooks are
 * switched off there.
 */
function geodeHooksIn(settings: Record<string, unknown>): {
  count: number;
  modes: HookMode[];
  off: string | null;
} {
  const config = settings["hooksConfig"] as { enabled?: unknown; disabled?: unknown } | undefined;
  const off =
    config?.enabled === false
      ? "hooksConfig.enabled is false"
      : Array.isArray(config?.disabled) && config.disabled.includes(GEMINI_HOOK_NAME)
        ? `hooksConfig.disabled names "${GEMINI_HOOK_NAME}"`
        : null;
  const hooks = settings["hooks"];
  if (hooks === null || typeof hooks !== "object") return { count: 0, modes: [], off };
  let count = 0;
  for (const groups of Object.values(hooks as Record<string, unknown>))
    for (const g of Array.isArray(groups) ? groups : [])
      for (const h of Array.isArray(g?.hooks) ? (g.hooks as Array<Record<string, unknown>>) : [])
        if (h?.["type"] === "command" && isGeodeHookCommand(h["command"])) count++;
  return { count, modes: guardedModes(GEMINI_CLI_EVENTS, (event) => nestedHooksOf(hooks, event)), off };
}

/** The Gemini side of `--check`: hooks where Gemini looks, switched on, the folder trusted. */
function geminiSide(o: Options, io: CommandIO): AgentCheck {
  const fail = (problem: string) => ({ problem });
  const files = [...new Set([o.file, geminiUserSettings(io.env), geminiSystemSettings(io.env)])];
  let count = 0;
  const modes: HookMode[] = [];
  for (const f of files) {
    const r = readSettings(f);
    if ("error" in r) return fail(`${r.error}: Gemini CLI refuses to start`);
    const found = geodeHooksIn(r.settings);
    if (found.off !== null) return fail(`${f}: ${found.off}, so Gemini CLI runs none of its hooks`);
    count += found.count;
    modes.push(...found.modes);
  }
  if (count === 0)
    return fail(
      `no geode hooks in ${files.join(" or ")}: run geode connect gemini-cli --write ${geminiUserSettings(io.env)}`,
    );
  const untrusted = geminiTrustProblem(process.cwd(), io.env, settingsHere(io));
  if (untrusted !== null) return fail(untrusted);
  return { ok: `${count} hooks, the folder is trusted`, modes };
}

/**
 * `geode connect gemini-cli`: prints (or `--write`s into a Gemini settings file, merged; `--system`
 * into its system settings) the command hooks that send every Gemini CLI event to the agent
 * gateway, and says what the current folder's trust needs; `--check` proves Gemini will run them.
 */
export const connectGeminiCliCommand: CommandModule = {
  async run(args, io) {
    const { values, endpoint, failClosed } = parseConnectArgs(args, io.env, "gemini-cli", {
      system: { type: "boolean", default: false },
      check: { type: "boolean", default: false },
    });
    const system = values.system === true;
    const o: Options = {
      endpoint,
      file: path.resolve(
        values.write ?? (system ? geminiSystemSettings(io.env) : geminiUserSettings(io.env)),
      ),
      failClosed,
    };
    if (values.check) return reportCheck(endpoint, io, geminiSide(o, io));
    if (values.write === undefined && !system) {
      const hooks = geminiHooks({
        endpoint,
        approvalTimeoutMs: loadConfig(io.env).approvalTimeoutMs,
        failClosed: o.failClosed,
      });
      io.err(printedLine(failClosed));
      io.out(`${JSON.stringify({ hooks }, null, 2)}\n`);
      return 0;
    }
    return write(o, io);
  },
};
