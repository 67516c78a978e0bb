import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { writeAtomically } from "./config-file.js";
import { TOKEN_ENV } from "./hook-command.js";

/**
 * The opencode side of `geode connect opencode` (docs/opencode.md): where opencode reads its
 * config, the plugin entry that loads `@geode/opencode-plugin` from a file beside it, and the
 * folder files that keep opencode's start-up install of `@opencode-ai/plugin` off the network.
 */

/** The opencode release whose plugin API the plugin is written against (and whose install it satisfies). */
const OPENCODE_VERSION = "1.18.33";

/** The plugin file's place, relative to the folder of the config file that loads it. */
const PLUGIN_FILE = path.join("geode", "opencode-plugin.js");

/** The options of the plugin entry (`GeodePluginOptions` of @geode/opencode-plugin). */
export interface PluginEntryOptions {
  url: string;
  token_env: string;
  fail_open: boolean;
}

/** The user's opencode config folder: `$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode`. */
export function userConfigDir(env: NodeJS.ProcessEnv): string {
  const xdg = env["XDG_CONFIG_HOME"];
  const home = env["HOME"] ?? os.homedir();
  return path.join(xdg ? xdg : path.join(home, ".config"), "opencode");
}

/** The managed config folder opencode reads on Linux (`/etc/opencode`; its own test variable moves it). */
export function managedConfigDir(env: NodeJS.ProcessEnv): string {
  return env["OPENCODE_TEST_MANAGED_CONFIG_DIR"] || "/etc/opencode";
}

/** The built plugin this CLI ships (the package's `./plugin` export, plain ESM JavaScript). */
function shippedPlugin(): string {
  return createRequire(import.meta.url).resolve("@geode/opencode-plugin/plugin");
}

/** Where the plugin of the config file `configFile` is placed. */
export const pluginFileFor = (configFile: string): string => path.join(path.dirname(configFile), PLUGIN_FILE);

/** Whether a plugin entry (a string or `[spec, options]`) is this CLI's. */
function isGeodeEntry(entry: unknown): boolean {
  const spec = Array.isArray(entry) ? entry[0] : entry;
  return (
    typeof spec === "string" &&
    spec.startsWith("file:") &&
    spec.endsWith(`/${PLUGIN_FILE.replace(path.sep, "/")}`)
  );
}

/** The config text read as JSON (opencode also reads JSONC: `//` line comments are dropped). */
export function readConfig(file: string): Record<string, unknown> {
  if (!existsSync(file)) return {};
  const text = readFileSync(file, "utf8").replace(/^\s*\/\/.*$/gm, "");
  if (text.trim() === "") return {};
  const config = JSON.parse(text) as unknown;
  if (config === null || typeof config !== "object" || Array.isArray(config))
    throw new Error("not an opencode config (a JSON object)");
  return config as Record<string, unknown>;
}

/** `config` with geode's plugin entry replaced by one loading `pluginFile` with `options` (other plugins kept). */
export function withPluginEntry(
  config: Record<string, unknown>,
  pluginFile: string,
  options: PluginEntryOptions,
): Record<string, unknown> {
  const plugins = config["plugin"] ?? [];
  if (!Array.isArray(plugins)) throw new Error("its plugin field is not a list");
  return {
    ...config,
    plugin: [...plugins.filter((p) => !isGeodeEntry(p)), [pathToFileURL(pluginFile).href, options]],
  };
}

/** Geode's plugin entry in a config: the plugin file it loads and its options, or null. */
export function geodeEntry(
  config: Record<string, unknown>,
): { file: string; options: Partial<PluginEntryOptions> } | null {
  const plugins = config["plugin"];
  if (!Array.isArray(plugins)) return null;
  const entry = plugins.find(isGeodeEntry);
  if (entry === undefined) return null;
  const [spec, options] = Array.isArray(entry) ? entry : [entry, {}];
  return { file: fileURLToPath(String(spec)), options: (options ?? {}) as Partial<PluginEntryOptions> };
}

/** Copies the shipped plugin to `pluginFile`. */
export function placePlugin(pluginFile: string): void {
  mkdirSync(path.dirname(pluginFile), { recursive: true });
  copyFileSync(shippedPlugin(), pluginFile);
}

/**
 * Whether opencode would run `npm install` in config folder `dir` at start: it installs
 * `@opencode-ai/plugin` (and the folder's own dependencies) unless the folder has `node_modules`
 * and a `package-lock.json` whose root lists every dependency. Null when it would not, else why.
 */
export function installProblem(dir: string): string | null {
  if (!existsSync(path.join(dir, "node_modules"))) return `${dir} has no node_modules`;
  let lock: { packages?: Record<string, { dependencies?: Record<string, string> }> };
  let pkg: { dependencies?: Record<string, string> } = {};
  try {
    lock = JSON.parse(readFileSync(path.join(dir, "package-lock.json"), "utf8"));
    if (existsSync(path.join(dir, "package.json")))
      pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
  } catch {
    return `${dir} has no readable package-lock.json`;
  }
  const listed = lock.packages?.[""]?.dependencies ?? {};
  const wanted = ["@opencode-ai/plugin", ...Object.keys(pkg.dependencies ?? {})];
  const missing = wanted.filter((d) => !Object.hasOwn(listed, d));
  return missing.length === 0 ? null : `the package-lock.json in ${dir} does not list ${missing.join(", ")}`;
}

/**
 * Makes config folder `dir` one opencode starts in with no network: `@opencode-ai/plugin` in its
 * `package.json`, a `package-lock.json` whose root lists every dependency, a `node_modules`
 * folder. The plugin needs none of it (it imports nothing); an existing lock is extended, never
 * replaced. Returns a problem that remains (dependencies of the folder's own that are not
 * installed), else null.
 */
export function makeInstallOffline(dir: string): string | null {
  if (installProblem(dir) === null) return null;
  mkdirSync(path.join(dir, "node_modules"), { recursive: true });
  const pkgFile = path.join(dir, "package.json");
  const pkg = existsSync(pkgFile)
    ? (JSON.parse(readFileSync(pkgFile, "utf8")) as { dependencies?: Record<string, string> })
    : {};
  const dependencies = { "@opencode-ai/plugin": OPENCODE_VERSION, ...(pkg.dependencies ?? {}) };
  if (!pkg.dependencies || !Object.hasOwn(pkg.dependencies, "@opencode-ai/plugin"))
    writeAtomically(pkgFile, `${JSON.stringify({ ...pkg, dependencies }, null, 2)}\n`);
  const lockFile = path.join(dir, "package-lock.json");
  let lock: { packages?: Record<string, Record<string, unknown>> } = {};
  try {
    lock = JSON.parse(readFileSync(lockFile, "utf8"));
  } catch {
    lock = { name: "opencode", lockfileVersion: 3, requires: true, packages: {} } as typeof lock;
  }
  const packages = lock.packages ?? {};
  const root = (packages[""] ?? {}) as { dependencies?: Record<string, string> };
  const rootDeps = root.dependencies ?? {};
  if (!Object.hasOwn(rootDeps, "@opencode-ai/plugin"))
    writeAtomically(
      lockFile,
      `${JSON.stringify(
        {
          ...lock,
          packages: {
            ...packages,
            "": { ...root, dependencies: { ...rootDeps, "@opencode-ai/plugin": OPENCODE_VERSION } },
          },
        },
        null,
        2,
      )}\n`,
    );
  return installProblem(dir);
}

/**
 * The folders opencode npm-installs `@opencode-ai/plugin` into at start, among those a set-up
 * writing config `file` touches: the user's config folder (unless `managed`), and the file's own
 * folder when it is a `.opencode` folder or `OPENCODE_CONFIG_DIR`.
 */
export function startInstallDirs(file: string, managed: boolean, env: NodeJS.ProcessEnv): string[] {
  const dir = path.dirname(file);
  const dirs = managed ? [] : [userConfigDir(env)];
  if (
    path.basename(dir) === ".opencode" ||
    (env["OPENCODE_CONFIG_DIR"] && path.resolve(env["OPENCODE_CONFIG_DIR"]) === dir)
  )
    dirs.push(dir);
  return [...new Set(dirs)];
}

/** The variables that turn every opencode plugin off, if one is set. */
export function pluginsOffBy(env: NodeJS.ProcessEnv): string | null {
  const pure = env["OPENCODE_PURE"];
  return pure !== undefined && pure !== "" && pure !== "0" && pure !== "false" ? "OPENCODE_PURE" : null;
}

/** The git worktree of `cwd` (the folder holding `.git`), else the file system's root, as opencode bounds its search. */
function worktreeOf(cwd: string): string {
  for (let dir = cwd; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, ".git"))) return dir;
    if (path.dirname(dir) === dir) return dir;
  }
}

const CONFIG_NAMES = ["opencode.json", "opencode.jsonc"];

/**
 * Why opencode started in `cwd` would not read config file `file`, or null when it would: the
 * user's config folder, the managed one, `OPENCODE_CONFIG`, `OPENCODE_CONFIG_DIR`, and (unless
 * `OPENCODE_DISABLE_PROJECT_CONFIG`) `opencode.json` / `.opencode/opencode.json` in `cwd` or a
 * folder above it inside its worktree.
 */
export function notReadBecause(file: string, cwd: string, env: NodeJS.ProcessEnv): string | null {
  const name = path.basename(file);
  const dir = path.dirname(file);
  if (env["OPENCODE_CONFIG"] && path.resolve(env["OPENCODE_CONFIG"]) === file) return null;
  if (!CONFIG_NAMES.includes(name) && !(name === "config.json" && dir === userConfigDir(env)))
    return `opencode reads no config file named ${name} (only ${CONFIG_NAMES.join(" or ")})`;
  if (dir === userConfigDir(env) || dir === managedConfigDir(env)) return null;
  if (env["OPENCODE_CONFIG_DIR"] && path.resolve(env["OPENCODE_CONFIG_DIR"]) === dir) return null;
  if (env["OPENCODE_DISABLE_PROJECT_CONFIG"])
    return `OPENCODE_DISABLE_PROJECT_CONFIG is set, so opencode reads no project config such as ${file}`;
  const projectDir = path.basename(dir) === ".opencode" ? path.dirname(dir) : dir;
  const worktree = worktreeOf(cwd);
  const inside = (d: string, root: string) =>
    path.relative(root, d) === "" || !path.relative(root, d).startsWith("..");
  if (inside(cwd, projectDir) && inside(projectDir, worktree)) return null;
  return `opencode started in ${cwd} does not read ${file} (it reads opencode.json and .opencode/ in that folder and the folders above it up to ${worktree}, and ${userConfigDir(env)})`;
}

/** The token variable the plugin reads, as its entry names it. */
export const tokenEnvOf = (options: Partial<PluginEntryOptions>): string => options.token_env ?? TOKEN_ENV;
