/**
 * Runs the real Qwen Code CLI headless and fully offline: `qwen --yolo -o stream-json "<prompt>"`
 * with `HOME` a temp folder whose `~/.qwen/settings.json` selects the `openai` auth, pointed at a
 * scripted Chat Completions stand-in on loopback (`OPENAI_BASE_URL`). Its hooks come from
 * `geode connect qwen-code`, merged into that settings file (or another one, `write`).
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "@geode/testing";
import { type AgentPlane, type AgentSessionOptions, connectAgent } from "./agent-plane-support.js";
import { type AgentProcess, runAgentProcess, scratchFolders } from "./agent-process-support.js";
import {
  type ChatCompletionsStandIn,
  type ChatTurn,
  chatToolOutputs,
  startChatCompletionsStandIn,
} from "./chat-completions-stand-in.js";

const QWEN_BIN = path.join(REPO_ROOT, "node_modules/.bin/qwen");
const MODEL = "qwen3-coder-standin";

/** Qwen Code's shell tool: `run_shell_command {command}`. */
const QWEN_SHELL = { name: "run_shell_command", args: (command: string) => ({ command }) };

/** The Chat Completions stand-in with Qwen Code's shell tool for `{shell}` turns. */
export const startQwenStandIn = (script: ChatTurn[]): Promise<ChatCompletionsStandIn> =>
  startChatCompletionsStandIn(script, { shell: QWEN_SHELL });

/** The user settings a scratch HOME starts with (`extra` merged in: folder trust, say). */
function writeQwenSettings(home: string, extra: Record<string, unknown> = {}): void {
  mkdirSync(path.join(home, ".qwen"), { recursive: true });
  const security = { auth: { selectedType: "openai" }, ...((extra["security"] as object) ?? {}) };
  writeFileSync(
    path.join(home, ".qwen", "settings.json"),
    JSON.stringify({ ...extra, security, model: { name: MODEL } }, null, 2),
  );
}

/** A scratch HOME with Qwen Code's base settings (`~/.qwen/settings.json`) and a working folder. */
export function qwenScratch(settings: Record<string, unknown> = {}): ReturnType<typeof scratchFolders> & {
  settings: string;
} {
  const dirs = scratchFolders("qwen-code");
  writeQwenSettings(dirs.home, settings);
  return { ...dirs, settings: path.join(dirs.home, ".qwen", "settings.json") };
}

/** {@link qwenScratch}, removed after the test. */
export function qwenScratchFor(
  plane: AgentPlane,
  settings: Record<string, unknown> = {},
): { home: string; work: string } {
  const dirs = qwenScratch(settings);
  plane.cleanups.push(dirs.cleanup);
  return dirs;
}

/** Runs `qwen --yolo -o stream-json <prompt>` headless as session `sessionId`; killed after `timeoutMs`. */
export function runQwen(options: {
  prompt: string;
  home: string;
  cwd: string;
  apiUrl: string;
  sessionId: string;
  env?: Record<string, string>;
  args?: string[];
  timeoutMs?: number;
}): Promise<AgentProcess> {
  const args = [
    ...(options.args ?? ["--yolo"]),
    "-o",
    "stream-json",
    "--session-id",
    options.sessionId,
    options.prompt,
  ];
  return runAgentProcess(QWEN_BIN, args, {
    cwd: options.cwd,
    env: {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: options.home,
      OPENAI_API_KEY: "standin-not-a-real-key",
      OPENAI_BASE_URL: `${options.apiUrl}/v1`,
      OPENAI_MODEL: MODEL,
      QWEN_CODE_SUPPRESS_YOLO_WARNING: "1",
      ...options.env,
    },
    timeoutMs: options.timeoutMs,
  });
}

/** A scratch HOME with the gateway's hooks written by `geode connect qwen-code --write` (its user settings, or `write`'s path). */
async function qwenHomeFor(
  plane: AgentPlane,
  options: { url?: string; flags?: string[]; write?: (work: string) => string } = {},
): Promise<{ home: string; work: string }> {
  const dirs = qwenScratchFor(plane);
  await connectAgent(
    plane,
    "qwen-code",
    {
      url: options.url,
      write: options.write?.(dirs.work) ?? path.join(dirs.home, ".qwen", "settings.json"),
      flags: options.flags,
    },
    { HOME: dirs.home },
  );
  return dirs;
}

/** One Qwen Code session through the plane's gateway: the stand-in with `script`, `qwen` headless. */
export async function qwenSession(
  plane: AgentPlane,
  script: ChatTurn[],
  options: AgentSessionOptions & { args?: string[] } = {},
): Promise<{
  run: AgentProcess;
  api: ChatCompletionsStandIn;
  work: string;
  home: string;
  sessionId: string;
}> {
  const api = await startQwenStandIn(script);
  plane.cleanups.push(() => api.close());
  const { home, work } = await qwenHomeFor(plane, options);
  options.prepare?.(work);
  const sessionId = randomUUID();
  const run = await runQwen({
    prompt: options.prompt ?? "Do the task.",
    home,
    cwd: work,
    apiUrl: api.url,
    sessionId,
    env: { GEODE_AGENT_TOKEN: options.token ?? plane.token() },
    ...(options.args ? { args: options.args } : {}),
  });
  return { run, api, work, home, sessionId };
}

/** What the model was told after a tool ran (the tool messages, as Qwen Code sent them). */
export const qwenToolOutputs = chatToolOutputs;
