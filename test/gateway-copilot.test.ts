/**
 * The real GitHub Copilot CLI, headless and offline (`copilot -p`), governed through the agent
 * gateway: its hooks come from `geode connect copilot` (user-level, which Copilot always loads),
 * its token from `geode agents add`, its model is a scripted stand-in for the chat-completions API
 * on loopback.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { HookName } from "@geode/contracts";
import { freePort } from "@geode/local-server";
import { type HookEnvelope, serveApprovals } from "@geode/sdk";
import { REPO_ROOT } from "@geode/testing";
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
import { runAgentProcess } from "./agent-process-support.js";
import {
  type CopilotTurn,
  copilotHomeFor,
  copilotScratchFor,
  copilotSession,
  copilotToolOutputs,
  runCopilot,
  startChatStandIn,
} from "./copilot-support.js";

const GEODE_BIN = path.join(REPO_ROOT, "packages/cli/bin/geode.mjs");
const plane = useAgentPlane("copilot-laptop");
const { env, cleanups } = plane;

/** `geode` as a process of its own in `cwd` (what `--check` reads the folder of). */
const geodeIn = (cwd: string, args: string[], extra: Record<string, string>) =>
  runAgentProcess(process.execPath, [GEODE_BIN, ...args], {
    cwd,
    env: { PATH: process.env["PATH"], ...extra },
  });

const copilotHome = (options: { url?: string; flags?: string[]; write?: (work: string) => string } = {}) =>
  copilotHomeFor(plane, options);
const session = (script: CopilotTurn[], options: AgentSessionOptions & { args?: string[] } = {}) =>
  copilotSession(plane, script, options);

const shell = (command: string): CopilotTurn => ({ shell: command });

/** Runs the hook command the hooks file gives `event`, as Copilot runs it (a shell), with `input`. */
function runHookCommand(
  home: string,
  event: string,
  withToken: string,
  input: Record<string, unknown>,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const file = JSON.parse(readFileSync(path.join(home, ".copilot/hooks/geode.json"), "utf8")) as {
    hooks: Record<string, Array<{ bash: string }>>;
  };
  const cmd = file.hooks[event]?.[0]?.bash as string;
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", cmd], {
      env: { PATH: process.env["PATH"], GEODE_AGENT_TOKEN: withToken },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    child.once("close", (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(JSON.stringify(input));
  });
}

// Each case runs a real Copilot process (and its hook commands): give it room on a loaded machine.
const CLI = { timeout: 240_000 };

describe("Copilot CLI governed through the agent gateway", () => {
  it(
    "a preToolUse guard blocks a bash call even under --allow-all-tools: it never runs, the model reads the reason",
    CLI,
    async () => {
      await plane
        .scope()
        .serve(HookName.PreToolUse, { name: "no-touch", match: { tool_name: ["bash"] } }, (e) =>
          shellCommandOf(e).includes("blocked.txt")
            ? { action: "block", reason: "touching blocked.txt is not allowed" }
            : null,
        );
      const { run, api, work } = await session([shell("touch blocked.txt"), { text: "Could not do it." }]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(existsSync(path.join(work, "blocked.txt"))).toBe(false);
      expect(copilotToolOutputs(api).join("\n")).toContain("no-touch: touching blocked.txt is not allowed");
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
      await plane.scope().serve(HookName.PostToolUse, { name: "hint" }, () => ({
        action: "add_context",
        reason: "remember: the build needs COPILOT-CTX-77",
      }));
      const { api, work } = await session([shell("touch made.txt"), { text: "Done." }]);
      expect(existsSync(path.join(work, "made.txt"))).toBe(true);
      expect(seen.map(shellCommandOf)).toEqual(["touch made.txt"]);
      expect(copilotToolOutputs(api).join("\n")).toContain("remember: the build needs COPILOT-CTX-77");
    },
  );

  it(
    "without --allow-all-tools, Copilot's permission request is answered by an approver on the plane",
    CLI,
    async () => {
      const asked: string[] = [];
      const approver = serveApprovals({ nc: env().nc, names: env().names }, (request) => {
        asked.push(request.tool_name);
        return { decision: "allow", reason: "the on-call engineer says yes" };
      });
      cleanups.push(() => approver.close());
      await env().nc.flush();
      const { work } = await session([shell("touch approved.txt"), { text: "Done." }], { args: [] });
      expect(asked).toContain("bash");
      expect(existsSync(path.join(work, "approved.txt"))).toBe(true);
    },
  );

  it(
    "agentStop goes through the verifier: a revise makes Copilot go on, the budget ends it",
    CLI,
    async () => {
      const candidates: string[] = [];
      await plane.scope().serve(HookName.PostVerify, { name: "never-happy" }, (e) => {
        candidates.push(JSON.stringify(e.payload));
        return { action: "revise", instruction: "Say it again, better (COPILOT-REVISE)." };
      });
      const { run, api } = await session([
        { text: "One." },
        { text: "Two." },
        { text: "Three." },
        { text: "Four." },
      ]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      // Two revisions reach the model as the next prompt; the third verdict is past the budget.
      const revisions = api.requests.filter((r) => r.raw.includes("COPILOT-REVISE"));
      expect(revisions).toHaveLength(2);
      expect(api.requests).toHaveLength(3);
      // The verifier judged Copilot's answers, read from its transcript by the hook shim.
      expect(candidates[0]).toContain("One.");
    },
  );

  it(
    "fails closed by default: with the plane down or a wrong token, rm -rf is refused and the folder survives",
    CLI,
    async () => {
      const script = [shell(RM_PRECIOUS), { text: "Done." }];
      const tool = { sessionId: "s-cmd", toolName: "bash", toolArgs: { command: RM_PRECIOUS } };
      const dead = `http://127.0.0.1:${await freePort()}`;
      const down = await session(script, { url: dead, prepare: plantPrecious });
      expect(preciousSurvives(down.work)).toBe(true);
      expect(down.api.requests).toHaveLength(0);
      const unreachable = await runHookCommand(down.home, "preToolUse", plane.token(), tool);
      expect(unreachable.status).toBe(2);
      expect(unreachable.stderr).toContain("a guarded call is refused");
      expect(JSON.parse(unreachable.stdout)).toMatchObject({
        permissionDecision: "deny",
        permissionDecisionReason: expect.stringContaining("could not answer"),
      });
      // Exit 2 alone does not stop a prompt: the command prints Copilot's block too.
      const prompt = await runHookCommand(down.home, "userPromptSubmitted", plane.token(), {
        sessionId: "s",
        prompt: "hi",
      });
      expect(prompt.status).toBe(2);
      expect(JSON.parse(prompt.stdout)).toMatchObject({ decision: "block" });

      const wrong = await session(script, { token: "geode_agent_not-a-known-token", prepare: plantPrecious });
      expect(preciousSurvives(wrong.work)).toBe(true);
      expect(wrong.api.requests).toHaveLength(0);
      expect(`${wrong.run.stdout}${wrong.run.stderr}`).toContain("the gateway refused the agent token (401)");
      const refused = await runHookCommand(wrong.home, "preToolUse", "nope", tool);
      expect(refused.status).toBe(2);
      expect(refused.stderr).toContain("the gateway refused the agent token (401)");
      expect(JSON.parse(refused.stdout)).toMatchObject({
        permissionDecision: "deny",
        permissionDecisionReason: expect.stringContaining("the gateway refused the agent token (401)"),
      });
    },
  );

  it(
    "an unknown token gets 401 and nothing is invoked; --fail-open hooks let Copilot go on",
    CLI,
    async () => {
      const seen: HookEnvelope[] = [];
      await plane.scope().serve(HookName.PreToolUse, { name: "watch-tools" }, (e) => {
        seen.push(e);
        return { action: "block", reason: "never reached" };
      });
      const { run, work, home } = await session([shell(RM_PRECIOUS), { text: "Done." }], {
        token: "geode_agent_not-a-known-token",
        flags: ["--fail-open"],
        prepare: plantPrecious,
      });
      expect(run.code).toBe(0);
      expect(preciousSurvives(work)).toBe(false);
      expect(seen).toHaveLength(0);
      const answered = await runHookCommand(home, "preToolUse", "nope", {
        sessionId: "s-cmd",
        toolName: "bash",
        toolArgs: { command: "ls" },
      });
      expect(answered).toMatchObject({ status: 0, stdout: "" });
      expect(answered.stderr).toContain("the gateway refused the agent token (401)");
    },
  );

  it("the session is a run with agent_kind copilot: its events, invocations and JSONL", CLI, async () => {
    await plane.scope().serve(HookName.PreToolUse, { name: "audit-me" }, () => null);
    const { sessionId } = await session([shell("echo audited"), { text: "Done." }]);
    expect(sessionId).not.toBe("");
    await plane.expectRecordedSession(sessionId, {
      agentKind: "copilot",
      extension: "audit-me",
      started: { provider: "github" },
    });
    expect(readFileSync(path.join(plane.runsDir(), sessionId, "events.jsonl"), "utf8")).toContain(
      "tool_exec_ended",
    );
  });

  it(
    "--check passes on user-level hooks and catches repository hooks in an untrusted folder",
    CLI,
    async () => {
      const user = await copilotHome();
      const ok = await geodeIn(user.work, ["connect", "copilot", "--check", "--url", plane.gateway().url], {
        HOME: user.home,
        GEODE_AGENT_TOKEN: plane.token(),
      });
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain("geode.json");
      const badToken = await geodeIn(
        user.work,
        ["connect", "copilot", "--check", "--url", plane.gateway().url],
        {
          HOME: user.home,
          GEODE_AGENT_TOKEN: "nope",
        },
      );
      expect(badToken.code).toBe(1);
      expect(badToken.stderr).toMatch(/does not know the token/);

      expect(ok.stdout).toMatch(/\n {2}userPromptSubmitted +fail-closed\n {2}preToolUse +fail-closed\n/);

      // Repository hooks only: Copilot skips them silently unless it trusts the folder, so
      // writing them there says so and exits 1, in the words every connect uses.
      const repo = copilotScratchFor(plane);
      const at = { HOME: repo.home, GEODE_AGENT_TOKEN: plane.token() };
      const written = await runConnect(
        plane,
        "copilot",
        { write: path.join(repo.work, ".github/hooks/geode.json") },
        at,
      );
      expect(written.code).toBe(1);
      expect(written.out).toMatch(/^wrote fail-closed hooks for 14 Copilot CLI events/);
      expect(written.err).toMatch(
        /^the hooks are written, but Copilot CLI will not run them: .* Copilot does not trust /,
      );
      const untrusted = await geodeIn(
        repo.work,
        ["connect", "copilot", "--check", "--url", plane.gateway().url],
        at,
      );
      expect(untrusted.code).toBe(1);
      expect(untrusted.stderr).toMatch(/Copilot does not trust .* skips it silently/);
      expect(untrusted.stderr.trim().split("\n")).toHaveLength(1);
      // And indeed: a guard there never runs.
      await plane.scope().serve(HookName.PreToolUse, { name: "repo-guard" }, () => ({
        action: "block",
        reason: "no",
      }));
      const api = await startChatStandIn([shell("touch skipped.txt"), { text: "Done." }]);
      cleanups.push(() => api.close());
      const prompt = { prompt: "Do the task.", home: repo.home, cwd: repo.work, apiUrl: api.url };
      await runCopilot({ ...prompt, env: { GEODE_AGENT_TOKEN: plane.token() } });
      expect(existsSync(path.join(repo.work, "skipped.txt"))).toBe(true);
      // Trusted the way Copilot records it, the same hooks load and the check passes.
      writeFileSync(
        path.join(repo.home, ".copilot/config.json"),
        JSON.stringify({ trustedFolders: [repo.work] }),
      );
      const trusted = await geodeIn(
        repo.work,
        ["connect", "copilot", "--check", "--url", plane.gateway().url],
        at,
      );
      expect(trusted.code, trusted.stderr).toBe(0);
      expect(trusted.stdout).toContain("trusted folder");
    },
  );
});
