/**
 * Runs the real Gemini CLI headless and offline: `gemini -p … -o stream-json`, with `HOME` a temp
 * folder whose `.gemini/settings.json` selects API-key auth, and `GOOGLE_GEMINI_BASE_URL` a
 * scripted stand-in for the Gemini API on loopback. The stand-in answers each chat request (one
 * that declares tools) with the next turn of a script (a function call, or text that ends the
 * turn), streaming SSE `data:` chunks as the API does; any other model request gets a short text.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "@geode/testing";
import { type AgentPlane, type AgentSessionOptions, connectAgent } from "./agent-plane-support.js";
import {
  type AgentProcess,
  type AgentRunOptions,
  jsonLines,
  runAgentProcess,
  scratchFolders,
} from "./agent-process-support.js";
import { type StandInGate, type StandInRequest, startStandInServer } from "./stand-in-server.js";

/** The npm package's entry point (the `.bin` launcher is a shell script). */
const GEMINI_BIN = path.join(REPO_ROOT, "node_modules/@google/gemini-cli/bundle/gemini.js");
const GEMINI_MODEL = "gemini-2.5-pro";

/** One scripted answer of the model: a shell command to run, another tool call, or text that ends the turn. */
export type GeminiTurn =
  | { shell: string }
  | { call: { name: string; args: Record<string, unknown> } }
  | { text: string };

export interface GeminiStandIn {
  readonly url: string;
  /** The chat requests (those that declare tools), in order. */
  readonly requests: StandInRequest[];
  /** Every other model request. */
  readonly others: StandInRequest[];
  close(): Promise<void>;
}

function partOf(turn: GeminiTurn): Record<string, unknown> {
  if ("text" in turn) return { text: turn.text };
  const call =
    "shell" in turn
      ? { name: "run_shell_command", args: { command: turn.shell, description: "runs the command" } }
      : turn.call;
  return { functionCall: call };
}

const chunk = (part: Record<string, unknown>) => ({
  candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }],
  usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 8, totalTokenCount: 20 },
  modelVersion: GEMINI_MODEL,
});

/** Serves the Gemini API on 127.0.0.1: chat request i gets `script[i]` (then "Done."), each after `gate`. */
export async function startGeminiStandIn(script: GeminiTurn[], gate?: StandInGate): Promise<GeminiStandIn> {
  const requests: StandInRequest[] = [];
  const others: StandInRequest[] = [];
  let n = 0;
  const server = await startStandInServer(({ url, body, raw }, res) => {
    const chat = Array.isArray(body["tools"]) && url.includes(":streamGenerateContent");
    (chat ? requests : others).push({ url, body, raw });
    const part = chat ? partOf(script[n++] ?? { text: "Done." }) : { text: "{}" };
    if (url.includes(":streamGenerateContent")) {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.end(`data: ${JSON.stringify(chunk(part))}\n\n`);
    } else if (url.includes(":generateContent")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(chunk(part)));
    } else if (url.includes(":countTokens")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ totalTokens: 20 }));
    } else {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: 404, message: `no route ${url}` } }));
    }
  }, gate);
  return {
    url: server.url,
    requests,
    others,
    close: server.close,
  };
}

/** A scratch HOME with `.gemini/settings.json` for offline API-key use, and a working folder. */
export function geminiScratch(): { home: string; work: string; settings: string; cleanup(): void } {
  const { home, work, cleanup } = scratchFolders("gemini");
  mkdirSync(path.join(home, ".gemini"));
  const settings = path.join(home, ".gemini", "settings.json");
  writeFileSync(
    settings,
    `${JSON.stringify(
      {
        security: { auth: { selectedType: "gemini-api-key" } },
        general: { disableAutoUpdate: true, enableAutoUpdateNotification: false },
        telemetry: { enabled: false },
        privacy: { usageStatisticsEnabled: false },
      },
      null,
      2,
    )}\n`,
  );
  return {
    home,
    work,
    settings,
    cleanup,
  };
}

export interface GeminiRun extends AgentProcess {
  /** The `stream-json` event lines of stdout, parsed. */
  events: Array<Record<string, unknown>>;
}

/** Runs `gemini -p <prompt> -o stream-json` headless; kills it (and its children) after `timeoutMs`. */
export async function runGemini(options: AgentRunOptions & { apiUrl: string }): Promise<GeminiRun> {
  const args = [
    GEMINI_BIN,
    "-m",
    GEMINI_MODEL,
    "--approval-mode",
    "yolo",
    "-o",
    "stream-json",
    ...(options.args ?? []),
    "-p",
    options.prompt,
  ];
  const run = await runAgentProcess(process.execPath, args, {
    cwd: options.cwd,
    env: {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: options.home,
      GEMINI_API_KEY: "standin-not-a-real-key",
      GOOGLE_GEMINI_BASE_URL: options.apiUrl,
      NO_COLOR: "1",
      ...options.env,
    },
    timeoutMs: options.timeoutMs,
  });
  return { ...run, events: jsonLines(run.stdout) };
}

/** Trusts `folder` the way Gemini records it when its user says so. */
export function trustFolder(home: string, folder: string): void {
  writeFileSync(
    path.join(home, ".gemini", "trustedFolders.json"),
    JSON.stringify({ [folder]: "TRUST_FOLDER" }),
  );
}

/** A scratch HOME with API-key settings and no hooks, and a working folder (not trusted yet). */
export function geminiScratchFor(plane: AgentPlane): { home: string; work: string; settings: string } {
  const dirs = geminiScratch();
  plane.cleanups.push(dirs.cleanup);
  return dirs;
}

/** A scratch HOME with API-key settings, a trusted working folder, and the gateway's hooks written by `geode connect gemini-cli`. */
export async function geminiHomeFor(
  plane: AgentPlane,
  options: { url?: string; flags?: string[] } = {},
): Promise<{ home: string; work: string; settings: string }> {
  const dirs = geminiScratchFor(plane);
  trustFolder(dirs.home, dirs.work);
  // From the working folder, as a user runs it: connect says whether Gemini trusts the folder.
  await connectAgent(
    plane,
    "gemini-cli",
    { url: options.url, write: dirs.settings, flags: options.flags, cwd: dirs.work },
    { HOME: dirs.home },
  );
  return dirs;
}

/** One Gemini CLI session through the plane's gateway: the stand-in with `script`, `gemini -p`. */
export async function geminiSession(
  plane: AgentPlane,
  script: GeminiTurn[],
  options: AgentSessionOptions = {},
): Promise<{ run: GeminiRun; api: GeminiStandIn; work: string; home: string; sessionId: string }> {
  const api = await startGeminiStandIn(script);
  plane.cleanups.push(() => api.close());
  const { home, work } = await geminiHomeFor(plane, options);
  options.prepare?.(work);
  const run = await runGemini({
    prompt: options.prompt ?? "Do the task.",
    home,
    cwd: work,
    apiUrl: api.url,
    env: { GEODE_AGENT_TOKEN: options.token ?? plane.token() },
  });
  const init = run.events.find((e) => e["type"] === "init");
  return { run, api, work, home, sessionId: String(init?.["session_id"] ?? "") };
}

/** What the stand-in was told after a tool ran (the function responses, as Gemini sent them). */
export const geminiToolOutputs = (api: GeminiStandIn): string[] =>
  api.requests.flatMap((r) =>
    ((r.body["contents"] as Array<{ parts?: Array<Record<string, unknown>> }>) ?? []).flatMap((c) =>
      (c.parts ?? []).filter((p) => p["functionResponse"]).map((p) => JSON.stringify(p["functionResponse"])),
    ),
  );
