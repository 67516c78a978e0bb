/**
 * The real Codex CLI, headless and offline (`codex exec`), governed through the agent gateway: its
 * hooks come from `geode connect codex --write` (trusted the way Codex records trust, so Codex runs
 * them without --dangerously-bypass-hook-trust), its token from `geode agents add`, its model is a
 * scripted stand-in for the Responses API on loopback.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { freePort } from "@geode/cli";
import { HookName } from "@geode/contracts";
import type { HookEnvelope } from "@geode/sdk";
import { REPO_ROOT } from "@geode/testing";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { recordedSession, useAgentPlane } from "./agent-cli-support.js";
import {
  type CodexRun,
  type CodexTurn,
  codexScratch,
  providerConfig,
  type ResponsesStandIn,
  runCodex,
  startResponsesStandIn,
} from "./codex-support.js";

const CODEX = path.join(REPO_ROOT, "node_modules/.bin/codex");
const plane = useAgentPlane("codex-laptop");
const { cleanups, geode } = plane;

/** A scratch CODEX_HOME with the stand-in provider, and the gateway's hooks written by `geode connect codex`. */
async function codexHome(
  apiUrl: string,
  options: { url?: string; flags?: string[] } = {},
): Promise<{ home: string; work: string; config: string }> {
  const dirs = codexScratch();
  cleanups.push(dirs.cleanup);
  const config = path.join(dirs.home, "config.toml");
  writeFileSync(config, providerConfig(apiUrl));
  const r = await geode(
    [
      "connect",
      "codex",
      "--url",
      options.url ?? plane.gateway().url,
      "--write",
      config,
      "--codex",
      CODEX,
      ...(options.flags ?? []),
    ],
    { HOME: dirs.home, CODEX_HOME: dirs.home },
  );
  expect(r.code, `${r.out}\n${r.err}`).toBe(0);
  return { ...dirs, config };
}

/** One Codex session through the gateway: the stand-in with `script`, `codex exec`. */
async function session(
  script: CodexTurn[],
  options: { url?: string; flags?: string[]; token?: string; prompt?: string } = {},
): Promise<{ run: CodexRun; api: ResponsesStandIn; work: string; home: string; sessionId: string }> {
  const api = await startResponsesStandIn(script);
  cleanups.push(() => api.close());
  const { home, work } = await codexHome(api.url, options);
  const run = await runCodex({
    prompt: options.prompt ?? "Do the task.",
    home,
    cwd: work,
    env: { GEODE_AGENT_TOKEN: options.token ?? plane.token() },
  });
  const started = run.events.find((e) => e["type"] === "thread.started");
  return { run, api, work, home, sessionId: String(started?.["thread_id"] ?? "") };
}

const shell = (command: string): CodexTurn => ({ shell: command });
const command = (e: HookEnvelope) => String((e.payload["arguments"] as { command?: unknown }).command ?? "");

/**
 * Runs the hook command `config.toml` gives `event`, as Codex runs it (a shell), with a prompt as
 * input (asynchronously: the gateway it calls runs in this process).
 */
function runHookCommand(
  config: string,
  event: string,
  withToken: string,
): Promise<{ status: number | null; stderr: string }> {
  const hooks = (parse(config) as { hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>> })
    .hooks;
  const cmd = hooks[event]?.[0]?.hooks[0]?.command as string;
  const input = JSON.stringify({ session_id: "s-cmd", hook_event_name: event, prompt: "hi" });
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", cmd], {
      env: { PATH: process.env["PATH"], GEODE_AGENT_TOKEN: withToken },
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    child.stdout.resume();
    child.once("close", (status) => resolve({ status, stderr }));
    child.stdin.end(input);
  });
}

/** What the stand-in was told after the tool ran (the function call's output, as Codex sent it). */
const toolOutputs = (api: ResponsesStandIn) =>
  api.requests.flatMap((r) =>
    ((r.body["input"] as Array<Record<string, unknown>>) ?? [])
      .filter((i) => i["type"] === "function_call_output")
      .map((i) => String(i["output"])),
  );

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
          command(e).includes("blocked.txt")
            ? { action: "block", reason: "touching blocked.txt is not allowed" }
            : null,
        );
      const { api, work } = await session([shell("touch blocked.txt"), { text: "Could not do it." }]);
      expect(existsSync(path.join(work, "blocked.txt"))).toBe(false);
      expect(toolOutputs(api).join("\n")).toContain("no-touch: touching blocked.txt is not allowed");
    },
  );

  it(
    "a rewrite changes the command that runs (codex exec skips its own approval: bypassPermissions)",
    CLI,
    async () => {
      await plane.scope().serve(HookName.PreToolUse, { name: "redirect" }, (e) =>
        command(e) === "touch original.txt"
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
    "fails closed: with --fail-closed hooks and the gateway down, the prompt never reaches the model",
    CLI,
    async () => {
      const dead = `http://127.0.0.1:${await freePort()}`;
      const { run, api, home } = await session([shell("touch x.txt"), { text: "Done." }], {
        url: dead,
        flags: ["--fail-closed"],
      });
      expect(api.requests).toHaveLength(0);
      expect(run.code).toBe(0);
      // Codex shows no hook's stderr in `exec --json`; the hook command itself says why it refused.
      const refused = await runHookCommand(
        readFileSync(path.join(home, "config.toml"), "utf8"),
        "UserPromptSubmit",
        plane.token(),
      );
      expect(refused.status).toBe(2);
      expect(refused.stderr).toContain("a guarded call is refused");
    },
  );

  it("an unknown token gets 401 and nothing is invoked; fail-open hooks let Codex go on", CLI, async () => {
    const seen: HookEnvelope[] = [];
    await plane.scope().serve(HookName.UserPromptSubmit, { name: "watch-prompt" }, (e) => {
      seen.push(e);
      return null;
    });
    const { run, api, home } = await session([{ text: "Hello." }], {
      token: "geode_agent_not-a-known-token",
    });
    expect(run.code).toBe(0);
    expect(api.requests.length).toBeGreaterThan(0);
    expect(seen).toHaveLength(0);
    const answered = await runHookCommand(
      readFileSync(path.join(home, "config.toml"), "utf8"),
      "UserPromptSubmit",
      "nope",
    );
    expect(answered.status).toBe(1);
    expect(answered.stderr).toMatch(/401/);
  });

  it(
    "the session is a run with agent_kind codex: its events, invocations and timeline in Postgres",
    CLI,
    async () => {
      await plane.scope().serve(HookName.PreToolUse, { name: "audit-me" }, () => null);
      const { sessionId } = await session([shell("echo audited"), { text: "Done." }]);
      expect(sessionId).not.toBe("");
      const { started, audits, jsonl } = await recordedSession(plane, sessionId);
      expect(started).toMatchObject({
        agent_kind: "codex",
        agent: "codex-laptop",
        model: "gpt-5-codex",
        provider: "openai",
      });
      expect(audits).toEqual(expect.arrayContaining([{ extension: "audit-me", name: "PreToolUse" }]));
      expect(jsonl).toContain("session_started");
      // geode agents ls: the agent's kind, sessions and audited hook calls (audited above), from the projection.
      const ls = await geode(["agents", "ls", "--json"]);
      expect(ls.code, ls.err).toBe(0);
      const mine = (JSON.parse(ls.out) as Array<Record<string, unknown>>).find(
        (a) => a["name"] === "codex-laptop",
      );
      expect(mine).toMatchObject({ kinds: ["codex"] });
      expect(mine?.["sessions"]).toBeGreaterThanOrEqual(1);
      expect(mine?.["hook_calls"]).toBeGreaterThan(0);
      expect(mine?.["last_seen"]).toBeGreaterThan(0);
      const table = await geode(["agents", "ls"]);
      expect(table.out).toMatch(/codex-laptop .*codex/);
      // geode audit and geode events tail name the session's agent kind.
      const audit = await geode(["audit", "--session", sessionId, "--json"]);
      expect((JSON.parse(audit.out) as Array<Record<string, unknown>>)[0]).toMatchObject({
        agent_kind: "codex",
      });
      const tail = await geode(["events", "tail", "--session", sessionId, "--from-seq", "1", "--limit", "3"]);
      expect(tail.out).toMatch(/session_started\s+agent-gateway .*agent_kind=codex/);
      expect(tail.out).toMatch(/user_input_received\s+agent-gateway .*agent_kind=codex/);
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
});
