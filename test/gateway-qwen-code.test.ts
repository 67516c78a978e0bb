/**
 * The real Qwen Code CLI, headless and offline (`qwen --yolo -o stream-json`), governed through the
 * agent gateway: its hooks come from `geode connect qwen-code` (user settings by default), its token
 * from `geode agents add`, its model is a scripted Chat Completions stand-in on loopback.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { HookName } from "@geode/contracts";
import { freePort } from "@geode/local-server";
import type { HookEnvelope } from "@geode/sdk";
import { REPO_ROOT } from "@geode/testing";
import { describe, expect, it } from "vitest";
import {
  plantPrecious,
  preciousSurvives,
  RM_PRECIOUS,
  runConnect,
  shellCommandOf,
  useAgentPlane,
} from "./agent-plane-support.js";
import { runAgentProcess } from "./agent-process-support.js";
import type { ChatTurn } from "./chat-completions-stand-in.js";
import {
  qwenScratchFor,
  qwenSession,
  qwenToolOutputs,
  runQwen,
  startQwenStandIn,
} from "./qwen-code-support.js";

const GEODE_BIN = path.join(REPO_ROOT, "packages/cli/bin/geode.mjs");
const plane = useAgentPlane("qwen-laptop");
const { cleanups } = plane;

/** `geode` as a process of its own in `cwd` (what `--check` reads the folder of). */
const geodeIn = (cwd: string, args: string[], extra: Record<string, string>) =>
  runAgentProcess(process.execPath, [GEODE_BIN, ...args], {
    cwd,
    env: { PATH: process.env["PATH"], ...extra },
  });

const shell = (command: string): ChatTurn => ({ shell: command });

/** Runs the command hook the user settings give `event`, as Qwen Code runs it (a shell), with `input`. */
function runHookCommand(
  home: string,
  event: string,
  withToken: string,
  input: Record<string, unknown>,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const file = JSON.parse(readFileSync(path.join(home, ".qwen/settings.json"), "utf8")) as {
    hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>>;
  };
  const cmd = file.hooks[event]?.[0]?.hooks[0]?.command as string;
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

// Each case runs a real Qwen Code process (and its hook commands): give it room on a loaded machine.
const CLI = { timeout: 240_000 };

describe("Qwen Code governed through the agent gateway", () => {
  it(
    "a PreToolUse guard blocks a shell call under --yolo: it never runs, the model's next request has the reason",
    CLI,
    async () => {
      await plane
        .scope()
        .serve(HookName.PreToolUse, { name: "no-touch", match: { tool_name: ["run_shell_command"] } }, (e) =>
          shellCommandOf(e).includes("blocked.txt")
            ? { action: "block", reason: "touching blocked.txt is not allowed" }
            : null,
        );
      const { run, api, work } = await qwenSession(plane, [
        shell("touch blocked.txt"),
        { text: "Could not do it." },
      ]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(existsSync(path.join(work, "blocked.txt"))).toBe(false);
      expect(api.requests.length).toBeGreaterThanOrEqual(2);
      expect(qwenToolOutputs(api).join("\n")).toContain("no-touch: touching blocked.txt is not allowed");
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
        reason: "remember: the build needs QWEN-CTX-77",
      }));
      const { run, api, work } = await qwenSession(plane, [shell("touch made.txt"), { text: "Done." }]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(existsSync(path.join(work, "made.txt"))).toBe(true);
      expect(seen.map(shellCommandOf)).toEqual(["touch made.txt"]);
      expect(seen[0]?.correlation.tool_call_id).toBe("call_standin_1");
      expect(JSON.stringify(api.requests.at(-1)?.body)).toContain("QWEN-CTX-77");
    },
  );

  it("Stop goes through the verifier: a revise makes Qwen Code go on, the budget ends it", CLI, async () => {
    const candidates: string[] = [];
    await plane.scope().serve(HookName.PostVerify, { name: "never-happy" }, (e) => {
      candidates.push(JSON.stringify(e.payload));
      return { action: "revise", instruction: "Say it again, better (QWEN-REVISE)." };
    });
    const { run, api } = await qwenSession(plane, [
      { text: "One." },
      { text: "Two." },
      { text: "Three." },
      { text: "Four." },
    ]);
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    // Two revisions reach the model; the third verdict is past the budget and ends the turn.
    expect(api.requests).toHaveLength(3);
    expect(JSON.stringify(api.requests[1]?.body)).toContain("QWEN-REVISE");
    expect(candidates[0]).toContain("One.");
  });

  it(
    "fails closed by default: with the plane down or a wrong token, rm -rf is refused and the folder survives",
    CLI,
    async () => {
      const script = [shell(RM_PRECIOUS), { text: "Done." }];
      const dead = `http://127.0.0.1:${await freePort()}`;
      const down = await qwenSession(plane, script, { url: dead, prepare: plantPrecious });
      expect(preciousSurvives(down.work)).toBe(true);
      // The prompt itself is refused: the model is never asked.
      expect(down.api.requests).toHaveLength(0);
      const tool = { session_id: "s-cmd", hook_event_name: "PreToolUse", tool_name: "run_shell_command" };
      const unreachable = await runHookCommand(down.home, "PreToolUse", plane.token(), {
        ...tool,
        tool_input: { command: RM_PRECIOUS },
      });
      expect(unreachable.status).toBe(2);
      expect(unreachable.stderr).toContain(
        "geode: the agent gateway could not answer; a guarded call is refused",
      );

      const wrong = await qwenSession(plane, script, {
        token: "geode_agent_not-a-known-token",
        prepare: plantPrecious,
      });
      expect(preciousSurvives(wrong.work)).toBe(true);
      expect(wrong.api.requests).toHaveLength(0);
      const refused = await runHookCommand(wrong.home, "PreToolUse", "nope", {
        ...tool,
        tool_input: { command: RM_PRECIOUS },
      });
      expect(refused.status).toBe(2);
      expect(refused.stderr).toContain("the gateway refused the agent token (401)");
      // An event that guards nothing goes on (exit 1, a warning to Qwen Code).
      const after = await runHookCommand(wrong.home, "PostToolUse", "nope", {
        ...tool,
        hook_event_name: "PostToolUse",
        tool_input: {},
        tool_response: {},
      });
      expect(after.status).toBe(1);
    },
  );

  it(
    "--fail-open writes type http hooks: a guard still blocks through them, and a wrong token lets Qwen Code go on",
    CLI,
    async () => {
      const seen: HookEnvelope[] = [];
      await plane.scope().serve(HookName.PreToolUse, { name: "no-rm" }, (e) => {
        seen.push(e);
        return shellCommandOf(e).startsWith("rm ") ? { action: "block", reason: "no rm here" } : null;
      });
      const script = [shell(RM_PRECIOUS), { text: "Done." }];
      const http = await qwenSession(plane, script, { flags: ["--fail-open"], prepare: plantPrecious });
      const settings = JSON.parse(readFileSync(path.join(http.home, ".qwen/settings.json"), "utf8")) as {
        hooks: Record<string, Array<{ hooks: Array<{ type: string }> }>>;
      };
      expect(settings.hooks["PreToolUse"]?.[0]?.hooks[0]?.type).toBe("http");
      expect(preciousSurvives(http.work)).toBe(true);
      expect(qwenToolOutputs(http.api).join("\n")).toContain("no-rm: no rm here");

      const open = await qwenSession(plane, script, {
        flags: ["--fail-open"],
        token: "geode_agent_not-a-known-token",
        prepare: plantPrecious,
      });
      expect(open.run.code).toBe(0);
      expect(preciousSurvives(open.work)).toBe(false);
      expect(seen).toHaveLength(1);
    },
  );

  it("the session is a run with agent_kind qwen-code: its events, invocations and JSONL", CLI, async () => {
    await plane.scope().serve(HookName.PreToolUse, { name: "audit-me" }, () => null);
    const { run, sessionId } = await qwenSession(plane, [shell("echo audited"), { text: "Done." }]);
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    await plane.expectRecordedSession(sessionId, {
      agentKind: "qwen-code",
      extension: "audit-me",
      started: { provider: "qwen" },
      ended: false,
    });
    expect(readFileSync(path.join(plane.runsDir(), sessionId, "events.jsonl"), "utf8")).toContain(
      "tool_exec_ended",
    );
  });

  it(
    "--system writes the system settings Qwen Code reads; a user's disableAllHooks is caught",
    CLI,
    async () => {
      await plane
        .scope()
        .serve(HookName.PreToolUse, { name: "managed" }, (e) =>
          shellCommandOf(e).includes("managed.txt") ? { action: "block", reason: "managed says no" } : null,
        );
      const dirs = qwenScratchFor(plane);
      const system = path.join(dirs.home, "etc-qwen-code", "settings.json");
      const at = {
        HOME: dirs.home,
        QWEN_CODE_SYSTEM_SETTINGS_PATH: system,
        GEODE_AGENT_TOKEN: plane.token(),
      };
      const written = await runConnect(plane, "qwen-code", { flags: ["--system"] }, at);
      expect(written.code, written.err).toBe(0);
      expect(written.out).toContain(`hooks for 15 Qwen Code events to ${system}`);
      const check = ["connect", "qwen-code", "--check", "--url", plane.gateway().url];
      expect((await geodeIn(dirs.work, check, at)).code).toBe(0);
      const api = await startQwenStandIn([shell("touch managed.txt"), { text: "Done." }]);
      cleanups.push(() => api.close());
      const base = { prompt: "Do the task.", home: dirs.home, cwd: dirs.work, apiUrl: api.url };
      await runQwen({ ...base, sessionId: randomUUID(), env: at });
      expect(existsSync(path.join(dirs.work, "managed.txt"))).toBe(false);
      expect(qwenToolOutputs(api).join("\n")).toContain("managed: managed says no");
      // A user's disableAllHooks turns the managed hooks off too: --check names it.
      const user = path.join(dirs.home, ".qwen/settings.json");
      writeFileSync(
        user,
        JSON.stringify({ ...JSON.parse(readFileSync(user, "utf8")), disableAllHooks: true }),
      );
      const off = await geodeIn(dirs.work, check, at);
      expect(off.code).toBe(1);
      expect(off.stderr).toContain(`${user} sets disableAllHooks, so Qwen Code runs none of its hooks`);
    },
  );

  it(
    "--check passes on user settings and catches project hooks in a folder Qwen Code does not trust",
    CLI,
    async () => {
      const user = qwenScratchFor(plane);
      const at = (home: string, token = plane.token()) => ({ HOME: home, GEODE_AGENT_TOKEN: token });
      const written = await runConnect(
        plane,
        "qwen-code",
        { write: path.join(user.home, ".qwen/settings.json") },
        at(user.home),
      );
      expect(written.code, written.err).toBe(0);
      expect(written.out).toMatch(/^wrote fail-closed hooks for 15 Qwen Code events to /);
      const check = ["connect", "qwen-code", "--check", "--url", plane.gateway().url];
      const ok = await geodeIn(user.work, check, at(user.home));
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toMatch(/\n {2}UserPromptSubmit +fail-closed\n {2}PreToolUse +fail-closed\n/);
      const badToken = await geodeIn(user.work, check, at(user.home, "nope"));
      expect(badToken.code).toBe(1);
      expect(badToken.stderr).toMatch(/does not know the token/);

      // Folder trust on, the hooks in the project's settings: Qwen Code skips them silently, so
      // writing them there says so and exits 1, in the words every connect uses.
      const repo = qwenScratchFor(plane, { security: { folderTrust: { enabled: true } } });
      const project = path.join(repo.work, ".qwen/settings.json");
      const inRepo = await runConnect(plane, "qwen-code", { write: project }, at(repo.home));
      expect(inRepo.code).toBe(1);
      expect(inRepo.out).toMatch(/^wrote fail-closed hooks for 15 Qwen Code events/);
      expect(inRepo.err).toMatch(
        /^the hooks are written, but Qwen Code will not run them: Qwen Code does not trust .*skips the project's settings/,
      );
      const untrusted = await geodeIn(repo.work, check, at(repo.home));
      expect(untrusted.code).toBe(1);
      expect(untrusted.stderr).toMatch(/Qwen Code does not trust .* silently/);
      expect(untrusted.stderr.trim().split("\n")).toHaveLength(1);
      // And indeed: a guard there never runs.
      const seen: HookEnvelope[] = [];
      await plane.scope().serve(HookName.PreToolUse, { name: "repo-guard" }, (e) => {
        seen.push(e);
        return null;
      });
      const runIn = async (command: string) => {
        const api = await startQwenStandIn([shell(command), { text: "Done." }]);
        cleanups.push(() => api.close());
        const base = { prompt: "Do the task.", home: repo.home, cwd: repo.work, apiUrl: api.url };
        await runQwen({ ...base, sessionId: randomUUID(), env: { GEODE_AGENT_TOKEN: plane.token() } });
        return api;
      };
      expect((await runIn("touch skipped.txt")).requests.length).toBeGreaterThan(0);
      expect(seen).toHaveLength(0);
      // Trusted the way Qwen Code records it, the same hooks load and the check passes.
      writeFileSync(
        path.join(repo.home, ".qwen/trustedFolders.json"),
        JSON.stringify({ [repo.work]: "TRUST_FOLDER" }),
      );
      const trusted = await geodeIn(repo.work, check, at(repo.home));
      expect(trusted.code, trusted.stderr).toBe(0);
      await runIn("touch guarded.txt");
      expect(seen.map(shellCommandOf)).toEqual(["touch guarded.txt"]);
    },
  );
});
