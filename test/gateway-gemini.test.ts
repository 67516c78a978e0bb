/**
 * The real Gemini CLI, headless and offline (`gemini -p`), governed through the agent gateway: its
 * hooks come from `geode connect gemini-cli --write`, its working folder is trusted the way Gemini
 * records trust (`~/.gemini/trustedFolders.json`), its token from `geode agents add`, its model is
 * a scripted stand-in for the Gemini API on loopback.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { AGENT_TOOLS, HookName } from "@geode/contracts";
import { freePort } from "@geode/local-server";
import type { HookEnvelope } from "@geode/sdk";
import { describe, expect, it } from "vitest";
import {
  type AgentSessionOptions,
  plantPrecious,
  preciousSurvives,
  RM_PRECIOUS,
  runConnect,
  shellCommandOf,
  useAgentPlane,
} from "./agent-plane-support.js";
import { type NestedHooks, runNestedHook } from "./agent-process-support.js";
import {
  type GeminiTurn,
  geminiScratchFor,
  geminiSession,
  geminiToolOutputs,
  runGemini,
  startGeminiStandIn,
  trustFolder,
} from "./gemini-support.js";

const plane = useAgentPlane("gemini-laptop");
const { cleanups } = plane;

const session = (script: GeminiTurn[], options: AgentSessionOptions = {}) =>
  geminiSession(plane, script, options);

const shell = (command: string): GeminiTurn => ({ shell: command });

/** Runs the hook command the settings give `event`, as Gemini runs it (a shell). */
const runHookCommand = (settings: string, event: string, withToken: string) =>
  runNestedHook(
    (JSON.parse(readFileSync(settings, "utf8")) as { hooks: NestedHooks }).hooks,
    event,
    withToken,
  );

// Each case runs a real Gemini CLI process (and its hook commands): give it room on a loaded machine.
const CLI = { timeout: 180_000 };

describe("Gemini CLI governed through the agent gateway", () => {
  it(
    "a BeforeTool guard blocks a run_shell_command: it never runs, the model reads the reason",
    CLI,
    async () => {
      const seen: HookEnvelope[] = [];
      await plane
        .scope()
        .serve(
          HookName.PreToolUse,
          { name: "no-touch", match: { tool_name: ["run_shell_command"] } },
          (e) => {
            seen.push(e);
            return shellCommandOf(e).includes("blocked.txt")
              ? { action: "block", reason: "touching blocked.txt is not allowed" }
              : null;
          },
        );
      const { api, work } = await session([shell("touch blocked.txt"), { text: "Could not do it." }]);
      expect(seen).toHaveLength(1);
      expect(existsSync(path.join(work, "blocked.txt"))).toBe(false);
      expect(geminiToolOutputs(api).join("\n")).toContain("no-touch: touching blocked.txt is not allowed");
      // The tool-kind table knows every tool the pinned CLI offers its model.
      const declared = (
        (api.requests[0]?.body["tools"] ?? []) as Array<{ functionDeclarations?: Array<{ name: string }> }>
      ).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name));
      expect(declared).toContain("run_shell_command");
      expect(declared.filter((name) => AGENT_TOOLS["gemini-cli"][name] === undefined)).toEqual([]);
    },
  );

  it(
    "a rewrite changes the command that runs; AfterTool context reaches the model's next request",
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
      await plane.scope().serve(HookName.PostToolUse, { name: "hint" }, () => ({
        action: "add_context",
        reason: "remember: the build needs GEMINI-CTX-77",
      }));
      const { api, work } = await session([shell("touch original.txt"), { text: "Done." }]);
      expect(existsSync(path.join(work, "rewritten.txt"))).toBe(true);
      expect(existsSync(path.join(work, "original.txt"))).toBe(false);
      expect(api.requests[1]?.raw).toContain("remember: the build needs GEMINI-CTX-77");
    },
  );

  it("AfterAgent goes through the verifier: a revise loop ended by the budget", CLI, async () => {
    await plane.scope().serve(HookName.PostVerify, { name: "never-happy" }, () => ({
      action: "revise",
      instruction: "Say it again, better (GEMINI-REVISE).",
    }));
    const { run, api } = await session([
      { text: "One." },
      { text: "Two." },
      { text: "Three." },
      { text: "Four." },
    ]);
    // Two revisions reach the model as the next prompts of the turn; the third verdict is past the budget.
    expect(api.requests).toHaveLength(3);
    expect(api.requests.filter((r) => r.raw.includes("GEMINI-REVISE"))).toHaveLength(2);
    expect(run.stdout).not.toContain("Four.");
  });

  it(
    "fails closed by default: with the plane down or a wrong token, rm -rf is refused and the folder survives",
    CLI,
    async () => {
      const script = [shell(RM_PRECIOUS), { text: "Done." }];
      const dead = `http://127.0.0.1:${await freePort()}`;
      const down = await session(script, { url: dead, prepare: plantPrecious });
      expect(preciousSurvives(down.work)).toBe(true);
      expect(down.api.requests).toHaveLength(0);
      expect(`${down.run.stdout}${down.run.stderr}`).toContain("the agent gateway could not answer");
      const settings = (home: string) => path.join(home, ".gemini", "settings.json");
      const unreachable = await runHookCommand(settings(down.home), "BeforeTool", plane.token());
      expect(unreachable.status).toBe(2);
      expect(unreachable.stderr).toContain("a guarded call is refused");

      const wrong = await session(script, { token: "geode_agent_not-a-known-token", prepare: plantPrecious });
      expect(preciousSurvives(wrong.work)).toBe(true);
      expect(wrong.api.requests).toHaveLength(0);
      expect(`${wrong.run.stdout}${wrong.run.stderr}`).toContain("the gateway refused the agent token (401)");
      const refused = await runHookCommand(settings(wrong.home), "BeforeTool", "nope");
      expect(refused.status).toBe(2);
      expect(refused.stderr).toContain("the gateway refused the agent token (401)");
      expect(refused.stderr).not.toContain("could not answer");
    },
  );

  it(
    "an unknown token gets 401 and nothing is invoked; --fail-open hooks let Gemini go on",
    CLI,
    async () => {
      const seen: HookEnvelope[] = [];
      await plane.scope().serve(HookName.UserPromptSubmit, { name: "watch-prompt" }, (e) => {
        seen.push(e);
        return null;
      });
      const { run, api, home, work } = await session([shell(RM_PRECIOUS), { text: "Done." }], {
        token: "geode_agent_not-a-known-token",
        flags: ["--fail-open"],
        prepare: plantPrecious,
      });
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(api.requests.length).toBeGreaterThan(0);
      expect(preciousSurvives(work)).toBe(false);
      expect(seen).toHaveLength(0);
      const answered = await runHookCommand(
        path.join(home, ".gemini", "settings.json"),
        "BeforeAgent",
        "nope",
      );
      expect(answered.status).toBe(1);
      expect(answered.stderr).toContain("the gateway refused the agent token (401)");
      expect(answered.stderr).toContain("going on ungoverned");
    },
  );

  it(
    "the session is a run with agent_kind gemini-cli: its events, invocations and timeline in Postgres",
    CLI,
    async () => {
      await plane.scope().serve(HookName.PreToolUse, { name: "audit-me" }, () => null);
      const { sessionId } = await session([shell("echo audited"), { text: "Done." }]);
      expect(sessionId).not.toBe("");
      await plane.expectRecordedSession(sessionId, {
        agentKind: "gemini-cli",
        extension: "audit-me",
        started: { provider: "google" },
      });
    },
  );

  it(
    "--write and --check in an untrusted folder exit 1 and name it; trusted, --check passes and reports the fail modes",
    CLI,
    async () => {
      const api = await startGeminiStandIn([{ text: "Hello." }]);
      cleanups.push(() => api.close());
      const { home, work, settings } = geminiScratchFor(plane);
      const at = { HOME: home, GEODE_AGENT_TOKEN: plane.token() };
      const written = await runConnect(plane, "gemini-cli", { write: settings, cwd: work }, at);
      expect(written.code).toBe(1);
      expect(written.out).toMatch(/^wrote fail-closed hooks for 8 Gemini CLI events to /);
      expect(written.err).toMatch(
        /^the hooks are written, but Gemini CLI will not run them: here: Gemini CLI does not trust /,
      );
      const check = (extra: Record<string, string> = {}, flags: string[] = []) =>
        runConnect(plane, "gemini-cli", { flags: ["--check", ...flags], cwd: work }, { ...at, ...extra });
      const untrusted = await check();
      expect(untrusted.code).toBe(1);
      expect(untrusted.err).toMatch(/^Gemini CLI does not trust .* registers no hooks there/);
      const run = await runGemini({ prompt: "Hi", home, cwd: work, apiUrl: api.url, env: at });
      expect(run.code).not.toBe(0);
      expect(`${run.stdout}${run.stderr}`).toMatch(/not running in a trusted directory/);
      expect(api.requests).toHaveLength(0);
      trustFolder(home, work);
      const ok = await check();
      expect(ok.code, ok.err).toBe(0);
      expect(ok.out).toMatch(/^ok: 8 hooks, the folder is trusted/);
      expect(ok.out).toMatch(/\n {2}BeforeAgent +fail-closed\n {2}BeforeTool +fail-closed\n$/);
      expect((await check({ GEODE_AGENT_TOKEN: "nope" })).err).toMatch(/does not know the token/);
      // Written with --fail-open, --check says so, per hook.
      expect(
        (await runConnect(plane, "gemini-cli", { write: settings, cwd: work, flags: ["--fail-open"] }, at))
          .code,
      ).toBe(0);
      const open = await check();
      expect(open.code, open.err).toBe(0);
      expect(open.out).toMatch(/2 of 2 guarded hooks fail open/);
      expect(open.out).toMatch(/ {2}BeforeTool +fail-open\n/);
    },
  );
});
