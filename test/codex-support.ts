/**
 * Runs the real Codex CLI headless and offline: `codex exec --json`, with `HOME` and `CODEX_HOME`
 * a temp folder whose `config.toml` points its model provider at a scripted stand-in for the
 * OpenAI Responses API on loopback. The stand-in answers each request with the next turn of a
 * script (a shell call, or text that ends the turn), streaming SSE as the API does.
 */
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
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

/** The npm package's launcher: it runs the native binary of the platform package. */
const CODEX_BIN = createRequire(import.meta.url).resolve("@openai/codex/bin/codex.js");

/** The `codex` launcher `geode connect codex --codex` is given (to record trust as Codex does). */
export const CODEX = path.join(REPO_ROOT, "node_modules/.bin/codex");

/**
 * One scripted answer of the model: a shell command to run, another function call (an MCP tool's
 * in the `namespace` Codex lists it under, `mcp__<server>`), or text that ends the turn.
 */
export type CodexTurn =
  | { shell: string }
  | { call: { name: string; arguments: Record<string, unknown>; namespace?: string } }
  | { text: string };

export interface ResponsesStandIn {
  readonly url: string;
  readonly requests: StandInRequest[];
  close(): Promise<void>;
}

function itemOf(turn: CodexTurn, n: number): Record<string, unknown> {
  if ("text" in turn)
    return {
      type: "message",
      id: `msg_standin_${n}`,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: turn.text, annotations: [] }],
    };
  const call: { name: string; arguments: Record<string, unknown>; namespace?: string } =
    "shell" in turn ? { name: "exec_command", arguments: { cmd: turn.shell } } : turn.call;
  return {
    type: "function_call",
    id: `fc_standin_${n}`,
    call_id: `call_standin_${n}`,
    name: call.name,
    ...(call.namespace ? { namespace: call.namespace } : {}),
    arguments: JSON.stringify(call.arguments),
    status: "completed",
  };
}

function eventsOf(turn: CodexTurn, n: number): Array<[string, Record<string, unknown>]> {
  const id = `resp_standin_${n}`;
  const item = itemOf(turn, n);
  return [
    ["response.created", { type: "response.created", response: { id, status: "in_progress", output: [] } }],
    ["response.output_item.added", { type: "response.output_item.added", output_index: 0, item }],
    ["response.output_item.done", { type: "response.output_item.done", output_index: 0, item }],
    [
      "response.completed",
      {
        type: "response.completed",
        response: {
          id,
          status: "completed",
          output: [item],
          usage: {
            input_tokens: 12,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 8,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 20,
          },
        },
      },
    ],
  ];
}

/** Serves `POST /v1/responses` on 127.0.0.1: request i gets `script[i]` (then "Done."), each after `gate`. */
export async function startResponsesStandIn(
  script: CodexTurn[],
  gate?: StandInGate,
): Promise<ResponsesStandIn> {
  const requests: StandInRequest[] = [];
  let n = 0;
  const server = await startStandInServer(({ url, body, raw }, res) => {
    if (!url.startsWith("/v1/responses")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `no route ${url}` } }));
      return;
    }
    requests.push({ url, body, raw });
    const i = n++;
    const turn = script[i] ?? { text: "Done." };
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const [event, data] of eventsOf(turn, i))
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    res.end();
  }, gate);
  return {
    url: server.url,
    requests,
    close: server.close,
  };
}

/** A scratch CODEX_HOME (also HOME) and a working folder; removed by `cleanup`. */
function codexScratch(): { home: string; work: string; cleanup(): void } {
  return scratchFolders("codex");
}

/** The provider part of `config.toml`: the stand-in as a custom Responses provider, no approvals, no sandbox. */
export function providerConfig(apiUrl: string): string {
  return [
    'model = "gpt-5-codex"',
    'model_provider = "standin"',
    'approval_policy = "never"',
    'sandbox_mode = "danger-full-access"',
    "",
    "[model_providers.standin]",
    'name = "standin"',
    `base_url = "${apiUrl}/v1"`,
    'env_key = "STANDIN_API_KEY"',
    'wire_api = "responses"',
    "",
  ].join("\n");
}

export interface CodexRun extends AgentProcess {
  /** The `--json` event lines of stdout, parsed. */
  events: Array<Record<string, unknown>>;
}

/** Runs `codex exec --json <prompt>` headless; kills it (and its children) after `timeoutMs`. */
export async function runCodex(options: AgentRunOptions): Promise<CodexRun> {
  const args = [
    CODEX_BIN,
    "exec",
    "--skip-git-repo-check",
    "--ephemeral",
    "--json",
    ...(options.args ?? []),
    options.prompt,
  ];
  const run = await runAgentProcess(process.execPath, args, {
    cwd: options.cwd,
    env: {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: options.home,
      CODEX_HOME: options.home,
      STANDIN_API_KEY: "standin-not-a-real-key",
      ...options.env,
    },
    timeoutMs: options.timeoutMs,
  });
  return { ...run, events: jsonLines(run.stdout) };
}

/** A scratch CODEX_HOME with the stand-in provider, and the gateway's hooks written by `geode connect codex`. */
export async function codexHomeFor(
  plane: AgentPlane,
  apiUrl: string,
  options: { url?: string; flags?: string[] } = {},
): Promise<{ home: string; work: string; config: string }> {
  const dirs = codexScratch();
  plane.cleanups.push(dirs.cleanup);
  const config = path.join(dirs.home, "config.toml");
  writeFileSync(config, providerConfig(apiUrl));
  await connectAgent(
    plane,
    "codex",
    { url: options.url, write: config, flags: ["--codex", CODEX, ...(options.flags ?? [])] },
    { HOME: dirs.home, CODEX_HOME: dirs.home },
  );
  return { ...dirs, config };
}

/** One Codex session through the plane's gateway: the stand-in with `script`, `codex exec`. */
export async function codexSession(
  plane: AgentPlane,
  script: CodexTurn[],
  options: AgentSessionOptions = {},
): Promise<{ run: CodexRun; api: ResponsesStandIn; work: string; home: string; sessionId: string }> {
  const api = await startResponsesStandIn(script);
  plane.cleanups.push(() => api.close());
  const { home, work } = await codexHomeFor(plane, api.url, options);
  options.prepare?.(work);
  const run = await runCodex({
    prompt: options.prompt ?? "Do the task.",
    home,
    cwd: work,
    env: { GEODE_AGENT_TOKEN: options.token ?? plane.token() },
  });
  const started = run.events.find((e) => e["type"] === "thread.started");
  return { run, api, work, home, sessionId: String(started?.["thread_id"] ?? "") };
}

/**
 * What the stand-in was told after a tool ran (the function calls' output, as Codex sent it: a
 * text, or as JSON the content items it sends for an MCP tool's error result).
 */
export const codexToolOutputs = (api: ResponsesStandIn): string[] =>
  api.requests.flatMap((r) =>
    ((r.body["input"] as Array<Record<string, unknown>>) ?? [])
      .filter((i) => i["type"] === "function_call_output")
      .map((i) => (typeof i["output"] === "string" ? i["output"] : JSON.stringify(i["output"]))),
  );
