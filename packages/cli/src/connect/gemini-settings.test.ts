import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { GEMINI_CLI_EVENTS } from "@geode/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { mergeHooks } from "./claude-code-settings.js";
import { geminiHooks, geminiTrustProblem, readSettings } from "./gemini-settings.js";

const endpoint = "http://127.0.0.1:4280/v1/gemini-cli/hook";
const hooks = (failClosed = false) => geminiHooks({ endpoint, approvalTimeoutMs: 60_000, failClosed });
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const scratch = () => {
  const d = mkdtempSync(path.join(tmpdir(), "geode-gemini-settings-"));
  dirs.push(d);
  return d;
};

describe("the Gemini CLI hooks connect writes", () => {
  it("one command hook per event connect writes, timeouts in ms, a matcher on the tool events", () => {
    const block = hooks();
    expect(Object.keys(block)).toEqual(GEMINI_CLI_EVENTS.filter((e) => e.connect).map((e) => e.event));
    expect(block["BeforeTool"]).toEqual([
      {
        matcher: "*",
        hooks: [
          {
            name: "geode",
            type: "command",
            command: expect.stringMatching(/^\{ geode_err=\$\(curl /),
            timeout: 90_000,
          },
        ],
      },
    ]);
    expect(block["AfterAgent"]?.[0]?.hooks[0]?.["timeout"]).toBe(120_000);
    // Gemini discards any hook that is not a command.
    for (const groups of Object.values(block))
      for (const g of groups) for (const h of g.hooks) expect(h.type).toBe("command");
  });

  it("fail-closed only where the event guards: exit 2 on BeforeAgent and BeforeTool, 1 elsewhere", () => {
    const block = hooks(true);
    const command = (event: string) => String(block[event]?.[0]?.hooks[0]?.["command"]);
    expect(command("BeforeTool")).toMatch(/exit 2; }$/);
    expect(command("BeforeAgent")).toMatch(/exit 2; }$/);
    expect(command("AfterTool")).toMatch(/exit 1; }$/);
  });

  it("merges into settings, keeping the user's own hooks, and a second run never doubles", () => {
    const mine = { matcher: "write_file", hooks: [{ type: "command", command: "./lint.sh" }] };
    const settings = {
      security: { auth: { selectedType: "gemini-api-key" } },
      hooks: { BeforeTool: [mine] },
    };
    const once = mergeHooks(settings, hooks());
    const twice = mergeHooks(once, hooks(true));
    expect(twice["security"]).toEqual(settings.security);
    const before = (twice["hooks"] as Record<string, unknown[]>)["BeforeTool"];
    expect(before).toHaveLength(2);
    expect(before?.[0]).toEqual(mine);
  });

  it("reads settings with comments as Gemini does, and refuses a file that is not JSON", () => {
    const d = scratch();
    const file = path.join(d, "settings.json");
    writeFileSync(file, '{\n  // a comment\n  "a": "http://x" /* and another */\n}\n');
    expect(readSettings(file)).toEqual({ settings: { a: "http://x" } });
    writeFileSync(file, "{ nope");
    expect(readSettings(file)).toMatchObject({ error: expect.stringMatching(/is not valid JSON/) });
  });
});

describe("Gemini CLI's folder trust", () => {
  it("follows trustedFolders.json's longest rule, the environment, and folder trust switched off", () => {
    const home = scratch();
    const work = path.join(home, "code", "app");
    mkdirSync(work, { recursive: true });
    mkdirSync(path.join(home, ".gemini"));
    const env = { HOME: home };
    expect(geminiTrustProblem(work, env, [])).toMatch(/does not trust .*no rule in/);
    const rules = (r: Record<string, string>) =>
      writeFileSync(path.join(home, ".gemini", "trustedFolders.json"), JSON.stringify(r));
    rules({ [path.join(home, "code")]: "TRUST_FOLDER" });
    expect(geminiTrustProblem(work, env, [])).toBeNull();
    rules({ [path.join(home, "code")]: "TRUST_FOLDER", [work]: "DO_NOT_TRUST" });
    expect(geminiTrustProblem(work, env, [])).toMatch(/DO_NOT_TRUST/);
    rules({ [path.join(work, "x")]: "TRUST_PARENT" });
    expect(geminiTrustProblem(work, env, [])).toBeNull();
    rules({});
    expect(geminiTrustProblem(work, { ...env, GEMINI_CLI_TRUST_WORKSPACE: "true" }, [])).toBeNull();
    expect(geminiTrustProblem(work, env, [{ security: { folderTrust: { enabled: false } } }])).toBeNull();
  });
});
