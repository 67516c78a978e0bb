import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { SERVICE_NAMES } from "@geode/contracts";
import { serviceNodeArgs } from "./node-entry.js";

/** Absolute path of the repository root (this file is packages/cli/src/up/). */
export const REPO_ROOT = path.resolve(import.meta.dirname, "../../../..");

export interface ServiceEntry {
  name: string;
  /** Node's arguments that run it: its compiled `dist/main.js`, or its source through tsx. */
  nodeArgs: string[];
}

/** Every service with a `services/<name>/src/main.ts`, the known ones first in SERVICE_NAMES order (dispatcher, executor, verifier, recorder). */
export function discoverServices(root: string = REPO_ROOT): ServiceEntry[] {
  const dir = path.join(root, "services");
  const found = existsSync(dir)
    ? readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isDirectory() && existsSync(path.join(dir, d.name, "src/main.ts")))
        .map((d) => d.name)
    : [];
  const rank = (s: string) => {
    const i = (SERVICE_NAMES as readonly string[]).indexOf(s);
    return i === -1 ? SERVICE_NAMES.length : i;
  };
  return found
    .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
    .map((name) => ({ name, nodeArgs: serviceNodeArgs(path.join(dir, name)) }));
}

const LEVELS: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};
const OMIT = new Set(["level", "time", "msg", "service", "pid", "hostname", "v"]);

/**
 * One log line for people: a pino JSON line becomes `HH:MM:SS LEVEL msg key=value…`; any other
 * line is kept as it is.
 */
export function humanLogLine(line: string): string {
  if (!line.startsWith("{")) return line;
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof rec !== "object" || rec === null || !("msg" in rec || "level" in rec)) return line;
  const t = rec["time"];
  const date = typeof t === "number" || typeof t === "string" ? new Date(t) : undefined;
  const time = date && !Number.isNaN(date.getTime()) ? date.toISOString().slice(11, 19) : "";
  const level = typeof rec["level"] === "number" ? (LEVELS[rec["level"]] ?? String(rec["level"])) : "";
  const extra = Object.entries(rec)
    .filter(([k]) => !OMIT.has(k))
    .map(([k, v]) => {
      if (k === "err" && v && typeof v === "object" && "message" in v)
        return `err=${JSON.stringify(v.message)}`;
      return `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`;
    });
  return [time, level.padEnd(5), String(rec["msg"] ?? ""), ...extra].filter((s) => s !== "").join(" ");
}

export interface ServiceProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  readonly exited: Promise<number | string>;
  /** The last lines it wrote (for a start-up failure message). */
  tail(): string[];
}

/**
 * Starts one service (compiled, or from its sources when this CLI runs from its own) with `env`, passing each output line through
 * `onLine` (already made human-readable). `detached`: in a process group of its own, so a
 * terminal's Ctrl-C reaches only the parent, which then stops the services in order.
 */
export function spawnServiceProcess(
  service: ServiceEntry,
  env: NodeJS.ProcessEnv,
  onLine: (service: string, line: string, stream: "stdout" | "stderr") => void,
  options: { detached?: boolean } = {},
): ServiceProcess {
  const child = spawn(process.execPath, service.nodeArgs, {
    cwd: process.cwd(),
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached ?? false,
  });
  const last: string[] = [];
  const pipe = (stream: "stdout" | "stderr") => {
    let buffered = "";
    child[stream]?.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const raw of lines) {
        if (raw.trim() === "") continue;
        const line = humanLogLine(raw);
        last.push(line);
        if (last.length > 20) last.shift();
        onLine(service.name, line, stream);
      }
    });
    child[stream]?.on("end", () => {
      if (buffered.trim() !== "") onLine(service.name, humanLogLine(buffered), stream);
    });
  };
  pipe("stdout");
  pipe("stderr");
  const exited = new Promise<number | string>((resolve) => {
    child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"));
    child.once("error", (err) => resolve(err.message));
  });
  return { name: service.name, child, exited, tail: () => [...last] };
}
