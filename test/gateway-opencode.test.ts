/**
 * The real opencode, headless and offline (`opencode run`), governed through the agent gateway:
 * its plugin comes from `geode connect opencode` (user-level, beside `~/.config/opencode`), its
 * token from `geode agents add`, its model is a scripted Chat Completions stand-in on loopback.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HookName } from "@geode/contracts";
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
import { type ChatTurn, chatToolOutputs, startChatCompletionsStandIn } from "./chat-completions-stand-in.js";
import { bashTurn, opencodeScratchFor, opencodeSession, runOpencode } from "./opencode-support.js";

const plane = useAgentPlane("opencode-laptop");

const session = (
  script: ChatTurn[],
  options: AgentSessionOptions & { write?: (work: string, home: string) => string } = {},
) => opencodeSession(plane, script, options);

// Each case runs a real opencode process: give it room on a loaded machine.
const CLI = { timeout: 240_000 };

describe("opencode governed through the agent gateway", () => {
  it(
    "a tool.execute.before guard blocks a bash call: it never runs, the model reads the reason",
    CLI,
    async () => {
      await plane
        .scope()
        .serve(HookName.PreToolUse, { name: "no-touch", match: { tool_name: ["bash"] } }, (e) =>
          shellCommandOf(e).includes("blocked.txt")
            ? { action: "block", reason: "touching blocked.txt is not allowed" }
            : null,
        );
      const { run, api, work } = await session([bashTurn("touch blocked.txt"), { text: "Could not do it." }]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(existsSync(path.join(work, "blocked.txt"))).toBe(false);
      expect(chatToolOutputs(api).join("\n")).toContain("no-touch: touching blocked.txt is not allowed");
    },
  );

  it(
    "no decision lets the call run, and PostToolUse context reaches the model's next request",
    CLI,
    async () => {
      const seen: HookEnvelope[] = [];
      await plane.scope().serve(HookName.PreToolUse, { name: "watch" }, (e) => {
        seen.push(e);
        return null;
      });
      await plane.scope().serve(HookName.PostToolUse, { name: "remember" }, () => ({
        action: "add_context",
        reason: "the build needs OPENCODE-CTX-77",
      }));
      const { run, api, work } = await session([bashTurn("touch made.txt"), { text: "Made it." }]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(existsSync(path.join(work, "made.txt"))).toBe(true);
      expect(seen.map(shellCommandOf)).toEqual(["touch made.txt"]);
      expect(chatToolOutputs(api).join("\n")).toContain("the build needs OPENCODE-CTX-77");
    },
  );

  it(
    "fail-closed: with the gateway down, and with a wrong token, the prompt is refused and the model never asked",
    CLI,
    async () => {
      const port = await freePort();
      const down = await session([bashTurn(RM_PRECIOUS), { text: "Done." }], {
        url: `http://127.0.0.1:${port}`,
        prepare: plantPrecious,
      });
      // The prompt itself is guarded (chat.message): opencode refuses it and the model is never asked.
      expect(preciousSurvives(down.work)).toBe(true);
      expect(down.api.requests).toHaveLength(0);
      const said = `${down.run.stdout}${down.run.stderr}`;
      expect(said, said.slice(-2000)).toContain("a guarded call is refused");
      const wrong = await session([bashTurn(RM_PRECIOUS), { text: "Done." }], {
        token: "geode_agent_not-a-known-token",
        prepare: plantPrecious,
      });
      expect(preciousSurvives(wrong.work)).toBe(true);
      expect(wrong.api.requests).toHaveLength(0);
      expect(`${wrong.run.stdout}${wrong.run.stderr}`).toContain("the gateway refused the agent token (401)");
    },
  );

  it("the session is a run with agent_kind opencode: its events, invocations and JSONL", CLI, async () => {
    await plane.scope().serve(HookName.PreToolUse, { name: "audit-me" }, () => null);
    const { sessionId } = await session([bashTurn("echo audited"), { text: "Done." }]);
    expect(sessionId).not.toBe("");
    await plane.expectRecordedSession(sessionId, {
      agentKind: "opencode",
      extension: "audit-me",
      started: { provider: "opencode" },
    });
  });

  it(
    "--check proves opencode loads the plugin, and catches a plugin folder opencode does not read",
    CLI,
    async () => {
      const api = await startChatCompletionsStandIn([bashTurn("touch skipped.txt"), { text: "Done." }]);
      plane.cleanups.push(() => api.close());
      const { home, work } = opencodeScratchFor(plane, api.url);
      const env = { HOME: home, GEODE_AGENT_TOKEN: plane.token() };
      // A project config in a folder beside the one opencode runs in: opencode never reads it.
      const elsewhere = path.join(work, "elsewhere", ".opencode", "opencode.json");
      const project = path.join(work, "project");
      mkdirSync(project, { recursive: true });
      const written = await runConnect(plane, "opencode", { write: elsewhere, cwd: project }, env);
      expect(written.code, written.err).toBe(0);
      expect(written.out).toMatch(/^wrote fail-closed hooks for \d+ opencode events/);
      const check = await runConnect(
        plane,
        "opencode",
        { write: elsewhere, flags: ["--check"], cwd: project },
        env,
      );
      expect(check.code).toBe(1);
      expect(check.err).toMatch(/opencode started in .*project does not read .*elsewhere/);
      await plane
        .scope()
        .serve(HookName.PreToolUse, { name: "never" }, () => ({ action: "block", reason: "x" }));
      const run = await runOpencode({
        prompt: "Do it.",
        home,
        cwd: project,
        env: { GEODE_AGENT_TOKEN: plane.token() },
      });
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(existsSync(path.join(project, "skipped.txt"))).toBe(true);
      // User-level: opencode reads it from any folder; --check says so and names the fail modes.
      expect((await runConnect(plane, "opencode", { cwd: project }, env)).code).toBe(0);
      const ok = await runConnect(plane, "opencode", { flags: ["--check"], cwd: project }, env);
      expect(ok.code, ok.err).toBe(0);
      expect(ok.out).toMatch(/^ok: opencode loads the geode plugin from .*opencode\.json/);
      expect(ok.out).toMatch(/\n {2}tool\.execute\.before +fail-closed\n/);
      const pure = await runConnect(
        plane,
        "opencode",
        { flags: ["--check"], cwd: project },
        { ...env, OPENCODE_PURE: "1" },
      );
      expect(pure.code).toBe(1);
      expect(pure.err).toContain("OPENCODE_PURE is set");
    },
  );

  it(
    "a rewrite runs the rewritten arguments; --fail-open lets opencode go on with the gateway down",
    CLI,
    async () => {
      await plane.scope().serve(HookName.PreToolUse, { name: "redirect" }, (e) =>
        shellCommandOf(e) === "touch asked.txt"
          ? {
              action: "rewrite",
              updates: {
                arguments: { ...(e.payload["arguments"] as object), command: "touch rewritten.txt" },
              },
            }
          : null,
      );
      const { run, work } = await session([bashTurn("touch asked.txt"), { text: "Done." }]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(existsSync(path.join(work, "rewritten.txt"))).toBe(true);
      expect(existsSync(path.join(work, "asked.txt"))).toBe(false);
      const port = await freePort();
      const open = await session([bashTurn("touch ungoverned.txt"), { text: "Done." }], {
        url: `http://127.0.0.1:${port}`,
        flags: ["--fail-open"],
      });
      expect(open.run.code, open.run.stderr.slice(-1500)).toBe(0);
      expect(existsSync(path.join(open.work, "ungoverned.txt"))).toBe(true);
      expect(open.run.stderr).toContain("going on ungoverned");
    },
  );

  it(
    "a task sub-agent: SubagentStart and SubagentStop in the parent's session, its bash call guarded in its own",
    CLI,
    async () => {
      const started: HookEnvelope[] = [];
      const stopped: HookEnvelope[] = [];
      const calls: HookEnvelope[] = [];
      await plane.scope().serve(HookName.SubagentStart, { name: "sub-start" }, (e) => {
        started.push(e);
        return null;
      });
      await plane.scope().serve(HookName.SubagentStop, { name: "sub-stop" }, (e) => {
        stopped.push(e);
        return null;
      });
      await plane.scope().serve(HookName.PreToolUse, { name: "sub-guard" }, (e) => {
        calls.push(e);
        return shellCommandOf(e).includes("blocked.txt")
          ? { action: "block", reason: "sub-agents may not touch blocked.txt" }
          : null;
      });
      const task = { description: "look around", prompt: "Touch the file.", subagent_type: "general" };
      const { run, api, work, sessionId } = await session([
        { call: { name: "task", arguments: task } },
        bashTurn("touch blocked.txt"),
        { text: "The sub-agent could not." },
        { text: "Done." },
      ]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(existsSync(path.join(work, "blocked.txt"))).toBe(false);
      expect(chatToolOutputs(api).join("\n")).toContain("sub-agents may not touch blocked.txt");
      expect(started).toHaveLength(1);
      const child = String(started[0]?.payload["task_id"]);
      expect(child).toMatch(/^ses_/);
      expect(child).not.toBe(sessionId);
      expect(started[0]?.payload).toMatchObject({
        task_type: "general",
        description: "look around",
        child_session_key: child,
        parent_session_key: sessionId,
      });
      expect(started[0]?.correlation.session_id).toBe(sessionId);
      expect(stopped.map((e) => e.payload)).toEqual([
        expect.objectContaining({ task_id: child, task_type: "general", success: true }),
      ]);
      expect(stopped[0]?.correlation.session_id).toBe(sessionId);
      // The task call is the parent's, the bash call the child's.
      expect(calls.map((e) => [e.payload["tool_name"], e.correlation.session_id])).toEqual([
        ["task", sessionId],
        ["bash", child],
      ]);
      await plane.expectRecordedSession(sessionId, {
        agentKind: "opencode",
        extension: "sub-guard",
        started: { provider: "opencode" },
      });
    },
  );

  it(
    "--managed: the plugin in the managed config guards a user whose own config has no plugin",
    CLI,
    async () => {
      const managed = mkdtempSync(path.join(tmpdir(), "geode-opencode-managed-"));
      plane.cleanups.push(() => rmSync(managed, { recursive: true, force: true }));
      await plane
        .scope()
        .serve(HookName.PreToolUse, { name: "managed-guard" }, (e) =>
          shellCommandOf(e).includes("blocked.txt") ? { action: "block", reason: "the team says no" } : null,
        );
      const api = await startChatCompletionsStandIn([bashTurn("touch blocked.txt"), { text: "Done." }]);
      plane.cleanups.push(() => api.close());
      const { home, work } = opencodeScratchFor(plane, api.url);
      // The user's own folder as opencode leaves it once its start-up install has run.
      const userDir = path.join(home, ".config", "opencode");
      mkdirSync(path.join(userDir, "node_modules"));
      const dependencies = { "@opencode-ai/plugin": "1.18.33" };
      writeFileSync(path.join(userDir, "package.json"), JSON.stringify({ dependencies }));
      writeFileSync(
        path.join(userDir, "package-lock.json"),
        JSON.stringify({ name: "opencode", lockfileVersion: 3, packages: { "": { dependencies } } }),
      );
      const env = { HOME: home, OPENCODE_TEST_MANAGED_CONFIG_DIR: managed };
      const written = await runConnect(plane, "opencode", { flags: ["--managed"], cwd: work }, env);
      expect(written.code, written.err).toBe(0);
      expect(written.out).toContain(path.join(managed, "opencode.json"));
      expect(readFileSync(path.join(userDir, "opencode.json"), "utf8")).not.toContain("geode");
      const run = await runOpencode({
        prompt: "Do it.",
        home,
        cwd: work,
        env: { GEODE_AGENT_TOKEN: plane.token(), OPENCODE_TEST_MANAGED_CONFIG_DIR: managed },
      });
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(existsSync(path.join(work, "blocked.txt"))).toBe(false);
      expect(chatToolOutputs(api).join("\n")).toContain("managed-guard: the team says no");
      const check = await runConnect(
        plane,
        "opencode",
        { flags: ["--managed", "--check"], cwd: work },
        { ...env, GEODE_AGENT_TOKEN: plane.token() },
      );
      expect(check.code, check.err).toBe(0);
    },
  );
});
