/** Runs a real agent CLI as a test does: its own process group, its output collected, killed after a timeout. */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { GEODE_BIN } from "@geode/testing";

/** How a test runs an agent headless: its prompt, scratch HOME, working folder, and extras. */
export interface AgentRunOptions {
  prompt: string;
  home: string;
  cwd: string;
  /** Added to the agent's environment (which holds nothing of the test process's but PATH). */
  env?: Record<string, string>;
  args?: string[];
  timeoutMs?: number;
}

/** A scratch HOME and working folder for one agent run (`geode-<agent>-home-…`); removed by `cleanup`. */
export function scratchFolders(agent: string): { home: string; work: string; cleanup(): void } {
  const home = mkdtempSync(path.join(tmpdir(), `geode-${agent}-home-`));
  const work = mkdtempSync(path.join(tmpdir(), `geode-${agent}-work-`));
  return {
    home,
    work,
    cleanup() {
      rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
      rmSync(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}

export interface AgentProcess {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Spawns `command args` detached (its own process group, so a kill takes its children too) with
 * `env` as its whole environment; resolves once every holder of its output pipes is gone ("close",
 * not "exit"), or kills the group after `timeoutMs`.
 */
export function runAgentProcess(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number | undefined },
): Promise<AgentProcess> {
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
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** What a `geode` process said: its exit code (1 when it was killed), stdout and stderr apart. */
export interface GeodeRun {
  code: number;
  out: string;
  err: string;
}

/**
 * Runs the compiled `geode <args>` as a user runs it, a process of its own in `cwd` (default this
 * process's) with `env` as its whole environment; resolves when it ends.
 */
export async function geodeProcess(
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string },
): Promise<GeodeRun> {
  const run = await runAgentProcess(process.execPath, [GEODE_BIN, ...args], {
    cwd: options.cwd ?? process.cwd(),
    env: options.env,
  });
  return { code: run.code ?? 1, out: run.stdout, err: run.stderr };
}

/** The JSON object lines of an agent's event stream (`--json`, `stream-json`). */
export function jsonLines(stdout: string): Array<Record<string, unknown>> {
  const events: Array<Record<string, unknown>> = [];
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      events.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // not an event line
    }
  }
  return events;
}

/**
 * Runs one hook command as an agent runs it (`sh -c`), with `input` on stdin and only PATH and the
 * token in its environment (asynchronously: the gateway it calls may run in this process).
 */
function runHookCommandLine(
  command: string,
  input: string,
  token: string,
): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", command], {
      env: { PATH: process.env["PATH"], GEODE_AGENT_TOKEN: token },
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    child.stdout.resume();
    child.once("close", (status) => resolve({ status, stderr }));
    child.stdin.end(input);
  });
}

/** Hooks as Claude Code's format nests them (Codex's `config.toml`, Gemini CLI's settings): event → groups → hooks. */
export type NestedHooks = Record<string, Array<{ hooks: Array<{ command: string }> }>>;

/** Runs the first hook command `hooks` gives `event` as the agent runs it, with a prompt as input. */
export function runNestedHook(
  hooks: NestedHooks,
  event: string,
  token: string,
): Promise<{ status: number | null; stderr: string }> {
  const cmd = hooks[event]?.[0]?.hooks[0]?.command as string;
  return runHookCommandLine(
    cmd,
    JSON.stringify({ session_id: "s-cmd", hook_event_name: event, prompt: "hi" }),
    token,
  );
}
