/**
 * Runs the real Codex CLI headless and offline: `codex exec --json`, with `HOME` and `CODEX_HOME`
 * a temp folder whose `config.toml` points its model provider at a scripted stand-in for the
 * OpenAI Responses API on loopback. The stand-in answers each request with the next turn of a
 * script (a shell call, or text that ends the turn), streaming SSE as the API does.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { runAgentProcess, type ScriptedApi, startScriptedApi } from "./agent-cli-support.js";

/** The npm package's launcher: it runs the native binary of the platform package. */
const CODEX_BIN = createRequire(import.meta.url).resolve("@openai/codex/bin/codex.js");

/** One scripted answer of the model: a shell command to run, or text that ends the turn. */
export type CodexTurn =
  | { shell: string }
  | { call: { name: string; arguments: Record<string, unknown> } }
  | { text: string };

/** The Responses API stand-in. */
export type ResponsesStandIn = ScriptedApi;

function itemOf(turn: CodexTurn, n: number): Record<string, unknown> {
  if ("text" in turn)
    return {
      type: "message",
      id: `msg_standin_${n}`,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: turn.text, annotations: [] }],
    };
  const call = "shell" in turn ? { name: "exec_command", arguments: { cmd: turn.shell } } : turn.call;
  return {
    type: "function_call",
    id: `fc_standin_${n}`,
    call_id: `call_standin_${n}`,
    name: call.name,
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

/** Serves `POST /v1/responses` on 127.0.0.1: request i gets `script[i]` (then "Done."). */
export function startResponsesStandIn(script: CodexTurn[]): Promise<ResponsesStandIn> {
  return startScriptedApi("/v1/responses", (i, res) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const [event, data] of eventsOf(script[i] ?? { text: "Done." }, i))
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    res.end();
  });
}

/** A scratch CODEX_HOME (also HOME) and a working folder; removed by `cleanup`. */
export function codexScratch(): { home: string; work: string; cleanup(): void } {
  const home = mkdtempSync(path.join(tmpdir(), "geode-codex-home-"));
  const work = mkdtempSync(path.join(tmpdir(), "geode-codex-work-"));
  return {
    home,
    work,
    cleanup() {
      rmSync(home, { recursive: true, force: true });
      rmSync(work, { recursive: true, force: true });
    },
  };
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

export interface CodexRun {
  code: number | null;
  /** The `--json` event lines of stdout, parsed. */
  events: Array<Record<string, unknown>>;
  stdout: string;
  stderr: string;
}

/** Runs `codex exec --json <prompt>` headless; kills it (and its children) after `timeoutMs`. */
export async function runCodex(options: {
  prompt: string;
  home: string;
  cwd: string;
  env?: Record<string, string>;
  args?: string[];
  timeoutMs?: number;
}): Promise<CodexRun> {
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
  const events: Array<Record<string, unknown>> = [];
  for (const line of run.stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      events.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // not an event line
    }
  }
  return { ...run, events };
}
