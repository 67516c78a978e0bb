/**
 * The real Codex CLI, headless and offline (`codex exec`), governed through the agent gateway: its
 * hooks come from `geode connect codex --write` (trusted the way Codex records trust, so Codex runs
 * them without --dangerously-bypass-hook-trust), its token from `geode agents add`, its model is a
 * scripted stand-in for the Responses API on loopback.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { HookName } from "@geode/contracts";
import { freePort } from "@geode/local-server";
import type { HookEnvelope } from "@geode/sdk";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import {
  type AgentSessionOptions,
  plantPrecious,
  preciousSurvives,
  RM_PRECIOUS,
  shellCommandOf,
  useAgentPlane,
} from "./agent-plane-support.js";
import { type NestedHooks, runNestedHook } from "./agent-process-support.js";
import {
  CODEX,
  type CodexTurn,
  codexHomeFor,
  codexSession,
  codexToolOutputs,
  startResponsesStandIn,
} from "./codex-support.js";

const plane = useAgentPlane("codex-laptop");
const { geode, cleanups } = plane;

const codexHome = (apiUrl: string, options: { url?: string; flags?: string[] } = {}) =>
  codexHomeFor(plane, apiUrl, options);
const session = (script: CodexTurn[], options: AgentSessionOptions = {}) =>
  codexSession(plane, script, options);

const shell = (command: string): CodexTurn => ({ shell: command });

/** Runs the hook command `config.toml` gives `event`, as Codex runs it (a shell). */
const runHookCommand = (config: string, event: string, withToken: string) =>
  runNestedHook((parse(config) as { hooks: NestedHooks }).hooks, event, withToken);

// Codex itself rejects `rm -rf` ("rm -f style commands are not permitted"): the same wipe, another way.
const WIPE_PRECIOUS = RM_PRECIOUS.replace(/^rm -rf (.*)$/, "find $1 -delete");

// Each case runs a real Codex process (and its hook commands): give it room on a loaded machine.
const CLI = { timeout: 240_000 };

describe("Codex CLI governed through the agent gateway", () => {
  it(
    "the hooks connect writes are trusted the way Codex records trust: it runs them, no bypass flag",
    CLI,
    async () => {
      const seen: string[] = [];
      await plane.scope().serve(HookName.SessionStart, { name: "watch-start" }, (e) => {
        seen.push(String(e.payload["model"]));
        return null;
      });
      const { run } = await session([{ text: "Hello." }]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(seen).toEqual(["gpt-5-codex"]);
    },
  );

  it(
    "a PreToolUse guard blocks a shell command: it never runs, the model reads the reason",
    CLI,
    async () => {
      await plane
        .scope()
        .serve(HookName.PreToolUse, { name: "no-touch", match: { tool_name: ["Bash"] } }, (e) =>
          shellCommandOf(e).includes("blocked.txt")
            ? { action: "block", reason: "touching blocked.txt is not allowed" }
            : null,
        );
      const { api, work } = await session([shell("touch blocked.txt"), { text: "Could not do it." }]);
      expect(existsSync(path.join(work, "blocked.txt"))).toBe(false);
      expect(codexToolOutputs(api).join("\n")).toContain("no-touch: touching blocked.txt is not allowed");
    },
  );

  it(
    "a rewrite changes the command that runs (codex exec skips its own approval: bypassPermissions)",
    CLI,
    async () => {
      await plane.scope().serve(HookName.PreToolUse, { name: "redirect" }, (e) =>
        shellCommandOf(e) === "touch original.txt"
          ? {
              action: "rewrite",
              updates: {
                arguments: { ...(e.payload["arguments"] as object), command: "touch rewritten.txt" },
              },
            }
          : null,
      );
      const { work } = await session([shell("touch original.txt"), { text: "Done." }]);
      expect(existsSync(path.join(work, "rewritten.txt"))).toBe(true);
      expect(existsSync(path.join(work, "original.txt"))).toBe(false);
    },
  );

  it("PostToolUse context reaches the model's next request", CLI, async () => {
    await plane.scope().serve(HookName.PostToolUse, { name: "hint" }, () => ({
      action: "add_context",
      reason: "remember: the build needs CODEX-CTX-77",
    }));
    const { api } = await session([shell("echo hi"), { text: "Done." }]);
    expect(api.requests[1]?.raw).toContain("remember: the build needs CODEX-CTX-77");
  });

  it("a Stop loop goes through the verifier and is ended by the revise budget", CLI, async () => {
    await plane.scope().serve(HookName.PostVerify, { name: "never-happy" }, () => ({
      action: "revise",
      instruction: "Say it again, better (CODEX-REVISE).",
    }));
    const { run, api } = await session([
      { text: "One." },
      { text: "Two." },
      { text: "Three." },
      { text: "Four." },
    ]);
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    // Two revisions reach the model as Codex's hook prompts; the third verdict is past the budget.
    const revisions = api.requests.filter((r) => r.raw.includes("CODEX-REVISE"));
    expect(revisions).toHaveLength(2);
    expect(api.requests).toHaveLength(3);
  });

  it(
    "fails closed by default: with the plane down or a wrong token, a wipe of a folder is refused and it survives",
    CLI,
    async () => {
      const script = [shell(WIPE_PRECIOUS), { text: "Done." }];
      const config = (home: string) => readFileSync(path.join(home, "config.toml"), "utf8");
      const dead = `http://127.0.0.1:${await freePort()}`;
      const down = await session(script, { url: dead, prepare: plantPrecious });
      expect(preciousSurvives(down.work)).toBe(true);
      expect(down.api.requests).toHaveLength(0);
      // Codex shows no hook's stderr in `exec --json`; the hook command itself says why it refused.
      const unreachable = await runHookCommand(config(down.home), "PreToolUse", plane.token());
      expect(unreachable.status).toBe(2);
      expect(unreachable.stderr).toContain("a guarded call is refused");

      const wrong = await session(script, { token: "geode_agent_not-a-known-token", prepare: plantPrecious });
      expect(preciousSurvives(wrong.work)).toBe(true);
      expect(wrong.api.requests).toHaveLength(0);
      const refused = await runHookCommand(config(wrong.home), "PreToolUse", "nope");
      expect(refused.status).toBe(2);
      expect(refused.stderr).toContain("the gateway refused the agent token (401)");
    },
  );

  it("an unknown token gets 401 and nothing is invoked; --fail-open hooks let Codex go on", CLI, async () => {
    const seen: HookEnvelope[] = [];
    await plane.scope().serve(HookName.UserPromptSubmit, { name: "watch-prompt" }, (e) => {
      seen.push(e);
      return null;
    });
    const { run, api, home, work } = await session([shell(WIPE_PRECIOUS), { text: "Done." }], {
      token: "geode_agent_not-a-known-token",
      flags: ["--fail-open"],
      prepare: plantPrecious,
    });
    expect(run.code).toBe(0);
    expect(api.requests.length).toBeGreaterThan(0);
    expect(preciousSurvives(work)).toBe(false);
    expect(seen).toHaveLength(0);
    const answered = await runHookCommand(
      readFileSync(path.join(home, "config.toml"), "utf8"),
      "UserPromptSubmit",
      "nope",
    );
    expect(answered.status).toBe(1);
    expect(answered.stderr).toContain("the gateway refused the agent token (401)");
  });

  it(
    "the session is a run with agent_kind codex: its events, invocations and timeline in Postgres",
    CLI,
    async () => {
      await plane.scope().serve(HookName.PreToolUse, { name: "audit-me" }, () => null);
      const { sessionId } = await session([shell("echo audited"), { text: "Done." }]);
      expect(sessionId).not.toBe("");
      await plane.expectRecordedSession(sessionId, {
        agentKind: "codex",
        extension: "audit-me",
        started: { model: "gpt-5-codex", provider: "openai" },
      });
    },
  );

  it("--check passes on a trusted set-up and names an untrusted hook", CLI, async () => {
    const api = await startResponsesStandIn([]);
    cleanups.push(() => api.close());
    const { home, config } = await codexHome(api.url);
    const at = { HOME: home, CODEX_HOME: home, GEODE_AGENT_TOKEN: plane.token() };
    const ok = await geode(
      ["connect", "codex", "--check", "--url", plane.gateway().url, "--codex", CODEX],
      at,
    );
    expect(ok.code, ok.err).toBe(0);
    expect(ok.out).toMatch(/trusted/);
    expect(ok.out).toMatch(
      /\n {2}UserPromptSubmit +fail-closed\n {2}PreToolUse +fail-closed\n {2}PermissionRequest +fail-closed\n$/,
    );
    // An edited hook is no longer the one that was trusted: Codex would skip it silently.
    writeFileSync(
      config,
      readFileSync(config, "utf8").replace("--max-time", "--connect-timeout 5 --max-time"),
    );
    const edited = await geode(
      ["connect", "codex", "--check", "--url", plane.gateway().url, "--codex", CODEX],
      at,
    );
    expect(edited.code).toBe(1);
    expect(edited.err).toMatch(/is (modified|untrusted): codex exec skips it silently/);
    const badToken = await geode(
      ["connect", "codex", "--check", "--url", plane.gateway().url, "--codex", CODEX],
      {
        ...at,
        GEODE_AGENT_TOKEN: "nope",
      },
    );
    expect(badToken.code).toBe(1);
  });

  it("--write to a file Codex does not read exits 1 with the wording every agent uses", CLI, async () => {
    const api = await startResponsesStandIn([]);
    cleanups.push(() => api.close());
    const { home } = await codexHome(api.url);
    const elsewhere = path.join(home, "not-read-by-codex.toml");
    const at = { HOME: home, CODEX_HOME: home, GEODE_AGENT_TOKEN: plane.token() };
    const r = await geode(
      ["connect", "codex", "--url", plane.gateway().url, "--write", elsewhere, "--codex", CODEX],
      at,
    );
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^wrote fail-closed hooks for \d+ Codex events to /);
    expect(r.err).toMatch(
      /^the hooks are written, but Codex will not run them: they are not trusted \(Codex does not list the hooks written to .*not-read-by-codex\.toml/,
    );
    expect(existsSync(elsewhere)).toBe(true);
  });
});
