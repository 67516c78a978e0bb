import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { QWEN_CODE_EVENTS } from "@geode/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { mergeHooks } from "./claude-code-settings.js";
import {
  isOurQwenHook,
  qwenCodeHooks,
  qwenHookFailMode,
  qwenHooksOff,
  qwenTrustProblem,
  qwenUserSettings,
} from "./qwen-code-settings.js";

const endpoint = "http://127.0.0.1:4280/v1/qwen-code/hook";
const hooks = (failClosed: boolean) => qwenCodeHooks({ endpoint, approvalTimeoutMs: 60_000, failClosed });
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const scratch = () => {
  const d = mkdtempSync(path.join(tmpdir(), "geode-qwen-settings-"));
  dirs.push(d);
  return d;
};
const first = (block: ReturnType<typeof hooks>, event: string) => block[event]?.[0]?.hooks[0];

describe("the Qwen Code hooks connect writes", () => {
  it("fail-closed: a command hook per mapped event, exit 2 only where the event guards, timeouts in seconds", () => {
    const block = hooks(true);
    expect(Object.keys(block)).toEqual(QWEN_CODE_EVENTS.map((e) => e.event));
    expect(block["PreToolUse"]?.[0]?.matcher).toBe("*");
    expect(block["Stop"]?.[0]?.matcher).toBeUndefined();
    expect(first(block, "PreToolUse")).toMatchObject({ name: "geode", type: "command", timeout: 90 });
    expect(first(block, "Stop")?.["timeout"]).toBe(120);
    const command = (event: string) => String(first(block, event)?.["command"]);
    expect(command("PreToolUse")).toMatch(/exit 2; }$/);
    expect(command("UserPromptSubmit")).toMatch(/exit 2; }$/);
    expect(command("PermissionRequest")).toMatch(/exit 2; }$/);
    expect(command("PostToolUse")).toMatch(/exit 1; }$/);
    expect(qwenHookFailMode(first(block, "PreToolUse"))).toBe("fail-closed");
  });

  it("fail-open: type http hooks with the token from GEODE_AGENT_TOKEN, which Qwen Code lets go on", () => {
    const entry = first(hooks(false), "PreToolUse");
    expect(entry).toEqual({
      name: "geode",
      type: "http",
      url: endpoint,
      headers: { Authorization: `Bearer \${GEODE_AGENT_TOKEN}` },
      allowedEnvVars: ["GEODE_AGENT_TOKEN"],
      timeout: 90,
    });
    expect(qwenHookFailMode(entry)).toBe("fail-open");
    expect(isOurQwenHook({ type: "http", url: "http://127.0.0.1:4280/v1/claude-code/hook" })).toBe(false);
    expect(isOurQwenHook({ type: "http", url: "not a url" })).toBe(false);
  });

  it("merges into settings, keeping the user's own hooks; switching modes never doubles", () => {
    const mine = { matcher: "write_file", hooks: [{ type: "command", command: "./lint.sh" }] };
    const settings = { security: { auth: { selectedType: "openai" } }, hooks: { PreToolUse: [mine] } };
    const once = mergeHooks(settings, hooks(false), isOurQwenHook);
    const twice = mergeHooks(once, hooks(false), isOurQwenHook);
    const thrice = mergeHooks(twice, hooks(true), isOurQwenHook);
    expect(thrice["security"]).toEqual(settings.security);
    const pre = (thrice["hooks"] as Record<string, unknown[]>)["PreToolUse"] as Array<{ hooks: unknown[] }>;
    expect(pre).toHaveLength(2);
    expect(pre[0]).toEqual(mine);
    expect(pre[1]?.hooks.map(qwenHookFailMode)).toEqual(["fail-closed"]);
  });
});

describe("whether Qwen Code reads a project's settings", () => {
  const setUp = (folderTrust: boolean | undefined, rules?: Record<string, string>) => {
    const home = scratch();
    const work = scratch();
    const env = { HOME: home, QWEN_CODE_SYSTEM_SETTINGS_PATH: path.join(home, "system.json") };
    mkdirSync(path.join(home, ".qwen"));
    writeFileSync(
      qwenUserSettings(env),
      JSON.stringify(
        folderTrust === undefined ? {} : { security: { folderTrust: { enabled: folderTrust } } },
      ),
    );
    if (rules) writeFileSync(path.join(home, ".qwen", "trustedFolders.json"), JSON.stringify(rules));
    return { env, work };
  };

  it("folder trust off (the default) trusts every folder", () => {
    expect(qwenTrustProblem(setUp(undefined).work, setUp(undefined).env)).toBeNull();
    const off = setUp(false);
    expect(qwenTrustProblem(off.work, off.env)).toBeNull();
  });

  it("folder trust on: a folder no rule names is not trusted, the deepest rule decides", () => {
    const none = setUp(true);
    expect(qwenTrustProblem(none.work, none.env)).toMatch(
      /^Qwen Code does not trust .*no rule in .* trusts it/,
    );
    const parent = setUp(true, {});
    writeFileSync(
      path.join(parent.env.HOME, ".qwen", "trustedFolders.json"),
      JSON.stringify({ [path.join(parent.work, "child")]: "TRUST_PARENT" }),
    );
    expect(qwenTrustProblem(parent.work, parent.env)).toBeNull();
    const deeper = setUp(true, {});
    writeFileSync(
      path.join(deeper.env.HOME, ".qwen", "trustedFolders.json"),
      JSON.stringify({ [path.dirname(deeper.work)]: "TRUST_FOLDER", [deeper.work]: "DO_NOT_TRUST" }),
    );
    expect(qwenTrustProblem(deeper.work, deeper.env)).toMatch(/says DO_NOT_TRUST for it/);
  });

  it("the system settings decide folder trust before the user's", () => {
    const s = setUp(true);
    writeFileSync(
      s.env.QWEN_CODE_SYSTEM_SETTINGS_PATH,
      JSON.stringify({ security: { folderTrust: { enabled: false } } }),
    );
    expect(qwenTrustProblem(s.work, s.env)).toBeNull();
  });

  it("disableAllHooks in a file it reads, or QWEN_CODE_SAFE_MODE, switches every hook off", () => {
    const { env } = setUp(undefined);
    expect(qwenHooksOff([qwenUserSettings(env)], env)).toBeNull();
    writeFileSync(qwenUserSettings(env), JSON.stringify({ disableAllHooks: true }));
    expect(qwenHooksOff([qwenUserSettings(env)], env)).toMatch(/sets disableAllHooks/);
    expect(qwenHooksOff([], { ...env, QWEN_CODE_SAFE_MODE: "1" })).toMatch(/QWEN_CODE_SAFE_MODE/);
    expect(qwenHooksOff([], { ...env, QWEN_CODE_SAFE_MODE: "false" })).toBeNull();
  });
});
