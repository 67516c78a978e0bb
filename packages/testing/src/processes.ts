import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";

/** Absolute path of the repository root. */
export const REPO_ROOT = path.resolve(import.meta.dirname, "../../..");
// tsx's loader, not its CLI: the CLI runs the script in a second process and cannot relay SIGKILL,
// so a crash test would kill the wrapper and leave the service running.
const TSX_LOADER = import.meta.resolve("tsx");
/** The compiled `geode` command (packages/cli/bin/geode.mjs), as users run it. */
export const GEODE_BIN = path.join(REPO_ROOT, "packages/cli/bin/geode.mjs");

/**
 * Node's arguments for an entry point: a package's or service's TypeScript source runs from its
 * compiled JavaScript (`dist/`, what production runs; the global set-up builds it), anything else
 * JavaScript as it is, and the rest (examples, benchmarks) through tsx's loader with the workspace packages' sources.
 */
function nodeArgs(entry: string): string[] {
  const file = path.resolve(REPO_ROOT, entry);
  const compiled = file.replace(/\/(packages|services)\/([^/]+)\/src\/(.+)\.ts$/, "/$1/$2/dist/$3.js");
  if (compiled !== file && existsSync(compiled)) return [compiled];
  if (/\.m?js$/.test(file)) return [file];
  return ["--import", TSX_LOADER, "--conditions=geode-source", file];
}

/**
 * `BENCH_CPU_PROF=<dir>`: every process started here (and by `pnpm bench`) writes a V8 CPU profile
 * into that directory when it exits (Node refuses `--cpu-prof` in NODE_OPTIONS).
 */
function cpuProfileArgs(env: NodeJS.ProcessEnv = process.env): string[] {
  const dir = env["BENCH_CPU_PROF"];
  return dir ? ["--cpu-prof", `--cpu-prof-dir=${path.resolve(dir)}`] : [];
}

export interface SpawnedProcess {
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves when a line matching `pattern` appears in the output. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code (or null if killed by a signal) once the process has ended. */
  exited: Promise<number | null>;
  /** Sends a signal and waits for exit; resolves with the exit code (or null if killed). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

/**
 * Runs an entry point (path relative to the repo root) as a real child process (see `nodeArgs`:
 * compiled when it is a package's or service's, else `node --import tsx`), with `env` added to the parent's environment. The child is the service
 * itself, so signals (SIGKILL included) reach it directly. It runs in the repo root unless `cwd`
 * says otherwise.
 */
export function spawnService(
  entry: string,
  env: Record<string, string>,
  args: string[] = [],
  options: { cwd?: string } = {},
): SpawnedProcess {
  const child = spawn(process.execPath, [...cpuProfileArgs(), ...nodeArgs(entry), ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    // Metrics off unless the test gives a port: parallel test processes must not compete for one.
    env: { ...process.env, GEODE_METRICS_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return track(child);
}

/**
 * Runs any program (`python3`, `sh`, …) as a child process in the repo root (or `cwd`), with `env`
 * added to the parent's environment: for handlers and endpoints written in other languages.
 */
export function spawnProgram(
  command: string,
  args: string[],
  env: Record<string, string>,
  options: { cwd?: string } = {},
): SpawnedProcess {
  const child = spawn(command, args, {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return track(child);
}

function track(child: ChildProcess): SpawnedProcess {
  let out = "";
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    out += chunk.toString("utf8");
    for (const w of waiters) w();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => out,
    // Generous: a TypeScript process starting on a loaded two-core machine can take 20 s.
    waitForOutput(pattern, timeoutMs = 60_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (pattern.test(out)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${pattern} in output:\n${out.slice(-4000)}`));
        }, timeoutMs);
        waiters.add(check);
        void exited.then((code) => {
          if (waiters.has(check)) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`process exited (${code}) before ${pattern}:\n${out.slice(-4000)}`));
          }
        });
        check();
      });
    },
    async stop(signal = "SIGTERM", timeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Polls `check` until it returns a truthy value or the time runs out. */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  timeoutMs = 10_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("waitFor: condition not met in time");
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** True while a process with this pid exists (signal 0 only asks). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
