import { existsSync } from "node:fs";
import path from "node:path";
import { OPENCODE_EVENTS } from "@geode/contracts";
import type { CommandIO, CommandModule } from "../command.js";
import { writeMergedJson } from "../connect/config-file.js";
import { parseConnectArgs } from "../connect/connect-args.js";
import { type HookMode, printedLine, wroteLine } from "../connect/fail-mode.js";
import { type AgentCheck, reportCheck } from "../connect/gateway-check.js";
import { TOKEN_ENV } from "../connect/hook-command.js";
import { hooksNotRun } from "../connect/hooks-not-run.js";
import {
  geodeEntry,
  installProblem,
  makeInstallOffline,
  managedConfigDir,
  notReadBecause,
  type PluginEntryOptions,
  placePlugin,
  pluginFileFor,
  pluginsOffBy,
  readConfig,
  startInstallDirs,
  tokenEnvOf,
  userConfigDir,
  withPluginEntry,
} from "../connect/opencode-config.js";

interface Options {
  endpoint: string;
  /** The config file written or checked. */
  file: string;
  /** True when the file was named (`--write` or `--managed`), not found by looking. */
  named: boolean;
  managed: boolean;
  failClosed: boolean;
}

const GUARDED = OPENCODE_EVENTS.filter((e) => e.guards);

const installDirs = (o: Options, env: NodeJS.ProcessEnv): string[] =>
  startInstallDirs(o.file, o.managed, env);

/** The folder a project config belongs to (`x/.opencode/opencode.json` and `x/opencode.json`: `x`). */
const projectOf = (file: string): string => {
  const dir = path.dirname(file);
  return path.basename(dir) === ".opencode" ? path.dirname(dir) : dir;
};

function write(o: Options, io: CommandIO): number {
  let config: Record<string, unknown>;
  try {
    config = readConfig(o.file);
  } catch {
    io.err(`${o.file} is not valid JSON; nothing written\n`);
    return 1;
  }
  const pluginFile = pluginFileFor(o.file);
  const options: PluginEntryOptions = { url: o.endpoint, token_env: TOKEN_ENV, fail_open: !o.failClosed };
  let merged: Record<string, unknown>;
  try {
    merged = withPluginEntry(config, pluginFile, options);
  } catch (err) {
    io.err(`${o.file}: ${err instanceof Error ? err.message : err}; nothing written\n`);
    return 1;
  }
  placePlugin(pluginFile);
  if (!writeMergedJson(o.file, io, () => merged)) return 1;
  const leftOnline = installDirs(o, io.env)
    .map((dir) => makeInstallOffline(dir))
    .filter((p): p is string => p !== null);
  io.out(
    `${wroteLine({ failClosed: o.failClosed, count: OPENCODE_EVENTS.length, agent: "opencode", file: o.file, endpoint: o.endpoint })}The plugin is ${pluginFile}; it reads the agent token from ${TOKEN_ENV}.\n`,
  );
  for (const p of leftOnline)
    io.err(`geode: opencode will still npm-install at start (${p}), which waits on the network\n`);
  const off = pluginsOffBy(io.env);
  if (off) return hooksNotRun(io, "opencode", `${off} is set, so opencode loads no plugin`);
  const notRead = notReadBecause(o.file, projectOf(o.file), io.env);
  if (notRead) return hooksNotRun(io, "opencode", notRead);
  return 0;
}

/** The config files opencode started in `cwd` reads, in the order `--check` looks for the plugin. */
function configCandidates(cwd: string, env: NodeJS.ProcessEnv): string[] {
  const files = [
    path.join(userConfigDir(env), "opencode.json"),
    path.join(userConfigDir(env), "opencode.jsonc"),
    path.join(managedConfigDir(env), "opencode.json"),
  ];
  for (let dir = cwd; ; dir = path.dirname(dir)) {
    for (const name of ["opencode.json", "opencode.jsonc"])
      files.push(path.join(dir, name), path.join(dir, ".opencode", name));
    if (existsSync(path.join(dir, ".git")) || path.dirname(dir) === dir) break;
  }
  return files;
}

/**
 * The opencode side of `--check`: plugins not turned off, a config opencode reads (from the
 * current folder) with geode's plugin entry, the plugin file where the entry points, posting to
 * this gateway, and no start-up install that waits on the network.
 */
function opencodeSide(o: Options, io: CommandIO): AgentCheck {
  const fail = (problem: string) => ({ problem });
  const off = pluginsOffBy(io.env);
  if (off) return fail(`${off} is set: opencode loads no plugin`);
  const cwd = process.cwd();
  const files = o.named ? [o.file] : configCandidates(cwd, io.env);
  let found: { file: string; entry: NonNullable<ReturnType<typeof geodeEntry>> } | undefined;
  for (const file of files) {
    let entry: ReturnType<typeof geodeEntry>;
    try {
      entry = geodeEntry(readConfig(file));
    } catch {
      return fail(`${file} is not valid JSON: opencode will not start with it`);
    }
    if (entry) {
      found = { file, entry };
      break;
    }
  }
  if (!found)
    return fail(
      `no geode plugin in ${files[0]}${files.length > 1 ? " or the other opencode configs of this folder" : ""}: run geode connect opencode${o.named ? ` --write ${o.file}` : ""}`,
    );
  const { file, entry } = found;
  const notRead = notReadBecause(file, cwd, io.env);
  if (notRead) return fail(`${notRead}, so its plugin never runs`);
  if (!existsSync(entry.file))
    return fail(
      `${file} loads the plugin from ${entry.file}, which does not exist: run geode connect opencode again`,
    );
  if (entry.options.url !== o.endpoint)
    return fail(
      `the plugin in ${file} posts to ${entry.options.url ?? "its default URL"}, not ${o.endpoint}`,
    );
  if (tokenEnvOf(entry.options) !== TOKEN_ENV)
    return fail(`the plugin in ${file} reads the token from ${tokenEnvOf(entry.options)}, not ${TOKEN_ENV}`);
  for (const dir of installDirs(
    { ...o, file, managed: path.dirname(file) === managedConfigDir(io.env) },
    io.env,
  )) {
    const problem = existsSync(dir) ? installProblem(dir) : null;
    if (problem)
      return fail(
        `opencode npm-installs @opencode-ai/plugin into ${dir} at start (${problem}), which waits on the network: run geode connect opencode again`,
      );
  }
  const mode = entry.options.fail_open === true ? "fail-open" : "fail-closed";
  const modes: HookMode[] = GUARDED.map((e) => ({ event: e.event, mode }));
  return { ok: `opencode loads the geode plugin from ${file}`, modes };
}

/**
 * `geode connect opencode`: places `@geode/opencode-plugin` beside an opencode config (the
 * user's, by default; `--managed`: `/etc/opencode`; `--write PATH`: any) and adds the entry that
 * loads it, with the gateway URL and the fail mode as its options; `--check` proves opencode
 * will run it.
 */
export const connectOpencodeCommand: CommandModule = {
  async run(args, io) {
    const { values, endpoint, failClosed } = parseConnectArgs(args, io.env, "opencode", {
      check: { type: "boolean", default: false },
      print: { type: "boolean", default: false },
      managed: { type: "boolean", default: false },
    });
    const managed = values.managed === true;
    const named = values.write !== undefined || managed;
    const file = path.resolve(
      values.write ?? path.join(managed ? managedConfigDir(io.env) : userConfigDir(io.env), "opencode.json"),
    );
    const o: Options = { endpoint, file, named, managed, failClosed };
    if (values.check) return reportCheck(endpoint, io, opencodeSide(o, io));
    if (values.print) {
      io.err(printedLine(failClosed));
      const entry = withPluginEntry({}, pluginFileFor(file), {
        url: endpoint,
        token_env: TOKEN_ENV,
        fail_open: !failClosed,
      });
      io.out(`${JSON.stringify(entry, null, 2)}\n`);
      return 0;
    }
    return write(o, io);
  },
};
