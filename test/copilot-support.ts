/**
 * Runs the real GitHub Copilot CLI headless and fully offline: `copilot -p` with `HOME` a temp
 * folder, `COPILOT_OFFLINE=true` and an OpenAI-style provider pointed at a scripted stand-in for
 * `/v1/chat/completions` on loopback. The stand-in answers each request with the next turn of a
 * script (a `bash` tool call, or text that ends the turn), streaming `chat.completion.chunk` SSE
 * frames as the API does.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "@geode/testing";
import { type AgentPlane, type AgentSessionOptions, connectAgent } from "./agent-plane-support.js";
import { type AgentProcess, runAgentProcess, scratchFolders } from "./agent-process-support.js";
import { type StandInGate, type StandInRequest, startStandInServer } from "./stand-in-server.js";

/** The npm package's loader: it runs the native binary of the platform package. */
const COPILOT_BIN = path.join(REPO_ROOT, "node_modules/.bin/copilot");

/**
 * Where the native binary unpacks its package (about 235 MB) on first run; shared by every run
 * (`COPILOT_PKG_CACHE_HOME`), so a fresh `HOME` does not unpack it again.
 */
const PKG_CACHE = path.join(REPO_ROOT, "node_modules/.cache/copilot");

/** One scripted answer of the model: a shell command to run, another tool call, or text that ends the turn. */
export type CopilotTurn =
  | { shell: string }
  | { call: { name: string; arguments: Record<string, unknown> } }
  | { text: string };

/** The function a tool-call turn names: `bash` for a shell command. */
function functionOf(turn: Exclude<CopilotTurn, { text: string }>): { name: string; arguments: string } {
  if ("call" in turn) return { name: turn.call.name, arguments: JSON.stringify(turn.call.arguments) };
  return {
    name: "bash",
    arguments: JSON.stringify({ command: turn.shell, description: "run", mode: "sync", initial_wait: 10 }),
  };
}

/** The chat-completions stand-in and the requests it was sent. */
export interface ChatStandIn {
  readonly url: string;
  readonly requests: StandInRequest[];
  close(): Promise<void>;
}

function framesOf(turn: CopilotTurn, n: number): Array<Record<string, unknown>> {
  const base = { id: `chatcmpl-standin-${n}`, object: "chat.completion.chunk", created: 1, model: "gpt-4.1" };
  const choice = (delta: Record<string, unknown>, finish: string | null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const first =
    "text" in turn
      ? choice({ role: "assistant", content: turn.text }, null)
      : choice(
          {
            role: "assistant",
            tool_calls: [{ index: 0, id: `call_standin_${n}`, type: "function", function: functionOf(turn) }],
          },
          null,
        );
  return [
    first,
    choice({}, "text" in turn ? "stop" : "tool_calls"),
    { ...base, choices: [], usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 } },
  ];
}

/** Serves `POST /v1/chat/completions` on 127.0.0.1: request i gets `script[i]` (then "Done."), each after `gate`. */
export async function startChatStandIn(script: CopilotTurn[], gate?: StandInGate): Promise<ChatStandIn> {
  const requests: StandInRequest[] = [];
  const server = await startStandInServer((request, res) => {
    if (!request.url.startsWith("/v1/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `no route ${request.url}` } }));
      return;
    }
    const i = requests.push(request) - 1;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const frame of framesOf(script[i] ?? { text: "Done." }, i))
      res.write(`data: ${JSON.stringify(frame)}\n\n`);
    res.end("data: [DONE]\n\n");
  }, gate);
  return { url: server.url, requests, close: server.close };
}

/** A scratch HOME (Copilot's folder `.copilot` in it) and a working folder; removed by `cleanup`. */
function copilotScratch(): { home: string; work: string; cleanup(): void } {
  const dirs = scratchFolders("copilot");
  mkdirSync(path.join(dirs.home, ".copilot"), { recursive: true });
  return dirs;
}

/** The environment of an offline Copilot run against the stand-in at `apiUrl`. */
function copilotEnv(home: string, apiUrl: string): Record<string, string> {
  return {
    PATH: process.env["PATH"] ?? "/usr/bin:/bin",
    HOME: home,
    COPILOT_PKG_CACHE_HOME: PKG_CACHE,
    COPILOT_OFFLINE: "true",
    COPILOT_PROVIDER_BASE_URL: `${apiUrl}/v1`,
    COPILOT_PROVIDER_TYPE: "openai",
    COPILOT_PROVIDER_API_KEY: "standin-not-a-real-key",
    COPILOT_MODEL: "gpt-4.1",
  };
}

/** Runs `copilot -p <prompt>` headless; kills it (and its children) after `timeoutMs`. */
export function runCopilot(options: {
  prompt: string;
  home: string;
  cwd: string;
  apiUrl: string;
  env?: Record<string, string>;
  args?: string[];
  timeoutMs?: number;
}): Promise<AgentProcess> {
  const args = [
    "-p",
    options.prompt,
    "--no-auto-update",
    "--disable-client-telemetry",
    ...(options.args ?? ["--allow-all-tools"]),
  ];
  return runAgentProcess(COPILOT_BIN, args, {
    cwd: options.cwd,
    env: { ...copilotEnv(options.home, options.apiUrl), ...options.env },
    timeoutMs: options.timeoutMs,
  });
}

/** A scratch HOME (no hooks yet) and a working folder, removed after the test. */
export function copilotScratchFor(plane: AgentPlane): { home: string; work: string } {
  const dirs = copilotScratch();
  plane.cleanups.push(dirs.cleanup);
  return dirs;
}

/** A scratch HOME with the gateway's hooks written by `geode connect copilot` (user-level, or to `write`'s path). */
export async function copilotHomeFor(
  plane: AgentPlane,
  options: { url?: string; flags?: string[]; write?: (work: string) => string } = {},
): Promise<{ home: string; work: string }> {
  const dirs = copilotScratchFor(plane);
  await connectAgent(
    plane,
    "copilot",
    { url: options.url, write: options.write?.(dirs.work), flags: options.flags },
    { HOME: dirs.home },
  );
  return dirs;
}

/** One Copilot session through the plane's gateway: the stand-in with `script`, `copilot -p`. */
export async function copilotSession(
  plane: AgentPlane,
  script: CopilotTurn[],
  options: AgentSessionOptions & { args?: string[] } = {},
): Promise<{ run: AgentProcess; api: ChatStandIn; work: string; home: string; sessionId: string }> {
  const api = await startChatStandIn(script);
  plane.cleanups.push(() => api.close());
  const { home, work } = await copilotHomeFor(plane, options);
  options.prepare?.(work);
  const run = await runCopilot({
    prompt: options.prompt ?? "Do the task.",
    home,
    cwd: work,
    apiUrl: api.url,
    env: { GEODE_AGENT_TOKEN: options.token ?? plane.token() },
    ...(options.args ? { args: options.args } : {}),
  });
  const sessionId = /--resume=([0-9a-f-]{36})/.exec(run.stdout + run.stderr)?.[1] ?? "";
  return { run, api, work, home, sessionId };
}

/** What the stand-in was told after a tool ran (the tool messages, as Copilot sent them). */
export const copilotToolOutputs = (api: ChatStandIn): string[] =>
  api.requests.flatMap((r) =>
    ((r.body["messages"] as Array<Record<string, unknown>>) ?? [])
      .filter((m) => m["role"] === "tool")
      .map((m) => String(m["content"])),
  );
