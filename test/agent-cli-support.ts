/**
 * What every test of a real agent CLI shares: the agent run as a process group of its own (killed
 * whole when it overruns), and the plane it runs against (dispatcher, verifier, recorder, an
 * agent gateway in-process, and one agent's token from `geode agents add`).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type ActivityRecorder, startActivityRecorder } from "@geode/activity-recorder";
import { type AgentGateway, startAgentGateway } from "@geode/agent-gateway";
import { runCliCaptured } from "@geode/cli/testing";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import { type TestEnv, useTestEnv, waitFor } from "@geode/testing";
import { type RunningVerifier, startVerifier } from "@geode/verifier";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { HandlerScope, startDispatcher } from "./hooks-support.js";

export interface AgentProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command args` detached (its own process group); kills the group after `timeoutMs`. */
export function runAgentProcess(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number | undefined },
): Promise<AgentProcessRun> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    detached: true,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
  child.stderr?.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
  const timer = setTimeout(() => {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }, options.timeoutMs ?? 120_000);
  return new Promise((resolve) => {
    // "close", not "exit": stdout is complete only once every holder of the pipe is gone.
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface AgentPlane {
  env: () => TestEnv;
  gateway: () => AgentGateway;
  scope: () => HandlerScope;
  /** The agent's token, as `geode agents add` printed it. */
  token: () => string;
  /** Where the recorder writes each run's JSONL. */
  runsDir: () => string;
  /** Run after each test, last added first. */
  cleanups: Array<() => void | Promise<void>>;
  /** `geode …` in-process, with the test namespace's environment and `extra`. */
  geode(args: string[], extra?: Record<string, string>): ReturnType<typeof runCliCaptured>;
}

/** One test file's plane and agent `agentName` (a gateway with a 20 s approval timeout). */
export function useAgentPlane(agentName: string): AgentPlane {
  const env = useTestEnv();
  let dispatcher: HookDispatcher | undefined;
  let verifier: RunningVerifier | undefined;
  let recorder: ActivityRecorder | undefined;
  let gateway: AgentGateway | undefined;
  let scope: HandlerScope | undefined;
  let token = "";
  let runsDir = "";
  const cleanups: AgentPlane["cleanups"] = [];
  const geode: AgentPlane["geode"] = (args, extra = {}) =>
    runCliCaptured(args, { ...process.env, ...env().env, ...extra });
  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error("agent plane is not ready");
    return v;
  };

  beforeAll(async () => {
    const { nc, names, databaseUrl } = env();
    runsDir = mkdtempSync(path.join(tmpdir(), `geode-${agentName}-runs-`));
    dispatcher = await startDispatcher(env());
    verifier = await startVerifier({ nc, names });
    recorder = await startActivityRecorder({ nc, names, databaseUrl, runsDir });
    gateway = await startAgentGateway({
      nc,
      names,
      config: { host: "127.0.0.1", port: 0, approvalTimeoutMs: 20_000 },
    });
    scope = new HandlerScope(env(), [dispatcher]);
    const added = await geode(["agents", "add", agentName]);
    expect(added.code, added.err).toBe(0);
    token = added.out.trimEnd().split("\n").at(-1) as string;
    await waitFor(() => gateway?.agents() === 1);
  }, 120_000);

  afterEach(async () => {
    await scope?.close();
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  afterAll(async () => {
    await gateway?.stop();
    await recorder?.stop();
    await verifier?.stop();
    await dispatcher?.stop();
    rmSync(runsDir, { recursive: true, force: true });
  });

  return {
    env,
    gateway: () => ready(gateway),
    scope: () => ready(scope),
    token: () => token,
    runsDir: () => runsDir,
    cleanups,
    geode,
  };
}
