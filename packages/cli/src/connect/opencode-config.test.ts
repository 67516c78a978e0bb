import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  geodeEntry,
  installProblem,
  makeInstallOffline,
  notReadBecause,
  pluginFileFor,
  pluginsOffBy,
  withPluginEntry,
} from "./opencode-config.js";

const dirs: string[] = [];
const scratch = () => {
  const d = mkdtempSync(path.join(tmpdir(), "geode-opencode-config-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const options = {
  url: "http://127.0.0.1:4280/v1/opencode/hook",
  token_env: "GEODE_AGENT_TOKEN",
  fail_open: false,
};

describe("the plugin entry", () => {
  it("is added beside the other plugins, replaced (never doubled), and read back", () => {
    const file = "/home/dev/.config/opencode/opencode.json";
    const plugin = pluginFileFor(file);
    expect(plugin).toBe("/home/dev/.config/opencode/geode/opencode-plugin.js");
    const once = withPluginEntry({ plugin: ["opencode-wakatime"], model: "x/y" }, plugin, options);
    const twice = withPluginEntry(once, plugin, { ...options, fail_open: true });
    expect(twice).toEqual({
      model: "x/y",
      plugin: ["opencode-wakatime", [`file://${plugin}`, { ...options, fail_open: true }]],
    });
    expect(geodeEntry(twice)).toEqual({ file: plugin, options: { ...options, fail_open: true } });
    expect(geodeEntry({ plugin: ["opencode-wakatime"] })).toBeNull();
    expect(() => withPluginEntry({ plugin: "x" }, plugin, options)).toThrow(/not a list/);
  });
});

describe("opencode's start-up install", () => {
  it("is kept offline: package.json, a lock that lists every dependency, node_modules; an existing lock is extended", () => {
    const dir = scratch();
    expect(installProblem(dir)).toMatch(/no node_modules/);
    expect(makeInstallOffline(dir)).toBeNull();
    expect(installProblem(dir)).toBeNull();
    const other = scratch();
    mkdirSync(path.join(other, "node_modules"));
    writeFileSync(
      path.join(other, "package.json"),
      JSON.stringify({ dependencies: { "left-pad": "1.3.0" } }),
    );
    writeFileSync(
      path.join(other, "package-lock.json"),
      JSON.stringify({ lockfileVersion: 3, packages: { "": { dependencies: { "left-pad": "1.3.0" } } } }),
    );
    expect(installProblem(other)).toMatch(/does not list @opencode-ai\/plugin/);
    expect(makeInstallOffline(other)).toBeNull();
    const lock = JSON.parse(readFileSync(path.join(other, "package-lock.json"), "utf8"));
    expect(Object.keys(lock.packages[""].dependencies)).toEqual(["left-pad", "@opencode-ai/plugin"]);
  });
});

describe("which configs opencode reads", () => {
  it("the user's from anywhere; a project's only from its folder or below; none named otherwise or switched off", () => {
    const home = scratch();
    const env = { HOME: home };
    const user = path.join(home, ".config", "opencode", "opencode.json");
    expect(notReadBecause(user, "/srv/anything", env)).toBeNull();
    const repo = scratch();
    mkdirSync(path.join(repo, ".git"));
    mkdirSync(path.join(repo, "app", "src"), { recursive: true });
    const project = path.join(repo, ".opencode", "opencode.json");
    expect(notReadBecause(project, path.join(repo, "app", "src"), env)).toBeNull();
    expect(notReadBecause(path.join(repo, "app", "opencode.json"), repo, env)).toMatch(/does not read/);
    expect(notReadBecause(path.join(repo, "settings.json"), repo, env)).toMatch(
      /no config file named settings\.json/,
    );
    expect(notReadBecause(project, repo, { ...env, OPENCODE_DISABLE_PROJECT_CONFIG: "1" })).toMatch(
      /OPENCODE_DISABLE_PROJECT_CONFIG/,
    );
    expect(pluginsOffBy({ OPENCODE_PURE: "1" })).toBe("OPENCODE_PURE");
    expect(pluginsOffBy({})).toBeNull();
  });
});
