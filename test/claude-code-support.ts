/**
 * Runs the real Claude Code CLI headless and offline: `claude -p … --settings FILE --output-format
 * json`, with `ANTHROPIC_BASE_URL` at a scripted stand-in for the Anthropic Messages API served on
 * loopback, `HOME` a temp folder. The stand-in answers the main loop's requests (they carry tools)
 * from a script of turns, streaming SSE as the API does, and side requests with a short text.
 */
import path from "node:path";
import { REPO_ROOT } from "@geode/testing";
import { type AgentProcess, runAgentProcess, scratchFolders } from "./agent-process-support.js";
import { type StandInGate, startStandInServer } from "./stand-in-server.js";

/** The pinned Claude Code as docs/claude-code.md runs it: its native binary, put there by its postinstall. */
const CLAUDE_BIN = path.join(REPO_ROOT, "node_modules/.bin/claude");

/** One scripted answer of the model: a tool call, or text that ends the turn. */
export type Turn = { tool: { name: string; input: Record<string, unknown> } } | { text: string };

interface RecordedRequest {
  url: string;
  /** The main loop's requests offer tools; side requests (titles, summaries) do not. */
  main: boolean;
  body: Record<string, unknown>;
  raw: string;
}

export interface AnthropicStandIn {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Main-loop requests only, in order. */
  main(): RecordedRequest[];
  close(): Promise<void>;
}

type SseEvent = [string, Record<string, unknown>];

function messageEvents(turn: Turn, model: string, n: number): SseEvent[] {
  const id = `msg_standin_${n}`;
  const events: SseEvent[] = [
    [
      "message_start",
      {
        type: "message_start",
        message: {
          id,
          type: "message",
          role: "assistant",
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 12, output_tokens: 1 },
        },
      },
    ],
  ];
  if ("tool" in turn) {
    events.push(
      [
        "content_block_start",
        {
          type: "content_block_start",
          index: 0,
          content_block: { type: "tool_use", id: `toolu_standin_${n}`, name: turn.tool.name, input: {} },
        },
      ],
      [
        "content_block_delta",
        {
          type: "content_block_delta",
          index: 0,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(turn.tool.input) },
        },
      ],
    );
  } else {
    events.push(
      [
        "content_block_start",
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      ],
      [
        "content_block_delta",
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: turn.text } },
      ],
    );
  }
  events.push(
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    [
      "message_delta",
      {
        type: "message_delta",
        delta: { stop_reason: "tool" in turn ? "tool_use" : "end_turn", stop_sequence: null },
        usage: { output_tokens: 8 },
      },
    ],
    ["message_stop", { type: "message_stop" }],
  );
  return events;
}

/**
 * Serves the Messages API on 127.0.0.1: main-loop request i gets `script[i]` (then "Done."), side
 * requests get a short text; `count_tokens` is answered too. Each request waits for `gate`.
 */
export async function startAnthropicStandIn(script: Turn[], gate?: StandInGate): Promise<AnthropicStandIn> {
  const requests: RecordedRequest[] = [];
  let mainCount = 0;
  let sent = 0;
  const server = await startStandInServer(({ url, body, raw }, res) => {
    if (url.startsWith("/v1/messages/count_tokens")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ input_tokens: 12 }));
      return;
    }
    if (!url.startsWith("/v1/messages")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: url } }));
      return;
    }
    const main = Array.isArray(body["tools"]) && (body["tools"] as unknown[]).length > 0;
    requests.push({ url, main, body, raw });
    const turn: Turn = main ? (script[mainCount++] ?? { text: "Done." }) : { text: "Side answer." };
    const model = typeof body["model"] === "string" ? body["model"] : "claude-standin";
    const n = sent++;
    if (body["stream"] !== true) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: `msg_standin_${n}`,
          type: "message",
          role: "assistant",
          model,
          content: [{ type: "text", text: "text" in turn ? turn.text : "Side answer." }],
          stop_reason: "end_turn",
          stop_sequence: null,
          usage: { input_tokens: 12, output_tokens: 3 },
        }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const [event, data] of messageEvents(turn, model, n))
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    res.end();
  }, gate);
  return {
    url: server.url,
    requests,
    main: () => requests.filter((r) => r.main),
    close: server.close,
  };
}

export interface ClaudeRun extends AgentProcess {
  /** The `--output-format json` result (null when stdout was not JSON). */
  result: Record<string, unknown> | null;
}

/** A scratch HOME and working folder for one run; removed by `cleanup`. */
export function scratch(): { home: string; work: string; cleanup(): void } {
  return scratchFolders("cc");
}

/** Runs `claude -p <prompt>` headless against the stand-in; kills it (and its children) after `timeoutMs`. */
export async function runClaude(options: {
  prompt: string;
  settingsFile: string;
  apiUrl: string;
  home: string;
  cwd: string;
  token: string;
  args?: string[];
  /** Added to its environment. */
  env?: Record<string, string>;
  timeoutMs?: number;
}): Promise<ClaudeRun> {
  const args = [
    "-p",
    options.prompt,
    "--settings",
    options.settingsFile,
    "--output-format",
    "json",
    ...(options.args ?? []),
  ];
  const run = await runAgentProcess(CLAUDE_BIN, args, {
    cwd: options.cwd,
    env: {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: options.home,
      ANTHROPIC_BASE_URL: options.apiUrl,
      ANTHROPIC_API_KEY: "sk-ant-standin-not-a-real-key",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      GEODE_AGENT_TOKEN: options.token,
      ...options.env,
    },
    timeoutMs: options.timeoutMs,
  });
  let result: Record<string, unknown> | null = null;
  try {
    result = JSON.parse(run.stdout) as Record<string, unknown>;
  } catch {
    // not JSON (a crash, or killed): left null
  }
  return { ...run, result };
}
