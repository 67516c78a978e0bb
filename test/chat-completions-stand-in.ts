/**
 * A scripted stand-in for the OpenAI Chat Completions API (`POST /v1/chat/completions`) on
 * loopback, for agents that speak it (Qwen Code through its `openai` auth, opencode): each of the agent's
 * main-loop requests (those that offer tools) gets the next turn of a script, a tool call or text
 * that ends the turn, streamed as `chat.completion.chunk` SSE frames (or one JSON completion when
 * the request does not stream). Side requests without tools get a short text and leave the script
 * where it is.
 */
import { type StandInGate, type StandInRequest, startStandInServer } from "./stand-in-server.js";

/** One scripted answer of the model: a shell command to run, another tool call, or text that ends the turn. */
export type ChatTurn =
  | { shell: string }
  | { call: { name: string; arguments: Record<string, unknown> } }
  | { text: string };

/** How a `{shell}` turn becomes the agent's shell tool call: the tool's name and its arguments. */
export interface ShellTool {
  name: string;
  args(command: string): Record<string, unknown>;
}

/** For a script of `{call}` and `{text}` turns only. */
const NO_SHELL: ShellTool = {
  name: "",
  args: () => {
    throw new Error("a {shell} turn needs the stand-in's shell option");
  },
};

/** The stand-in, the script's requests (those that offered tools) and every request it was sent. */
export interface ChatCompletionsStandIn {
  readonly url: string;
  /** The main-loop requests, in order (request i got the script's turn i). */
  readonly requests: StandInRequest[];
  /** Every request, side requests included. */
  readonly all: StandInRequest[];
  close(): Promise<void>;
}

function functionOf(turn: Exclude<ChatTurn, { text: string }>, shell: ShellTool) {
  if ("call" in turn) return { name: turn.call.name, arguments: JSON.stringify(turn.call.arguments) };
  return { name: shell.name, arguments: JSON.stringify(shell.args(turn.shell)) };
}

const USAGE = { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 };

function framesOf(turn: ChatTurn, n: number, shell: ShellTool): Array<Record<string, unknown>> {
  const base = { id: `chatcmpl-standin-${n}`, object: "chat.completion.chunk", created: 1, model: "standin" };
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
            tool_calls: [
              { index: 0, id: `call_standin_${n}`, type: "function", function: functionOf(turn, shell) },
            ],
          },
          null,
        );
  return [first, choice({}, "text" in turn ? "stop" : "tool_calls"), { ...base, choices: [], usage: USAGE }];
}

/** A non-streamed completion with `text` (side requests, or an agent that does not stream). */
function completionOf(text: string): Record<string, unknown> {
  return {
    id: "chatcmpl-standin-side",
    object: "chat.completion",
    created: 1,
    model: "standin",
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
    usage: USAGE,
  };
}

/**
 * Serves `POST /v1/chat/completions` on 127.0.0.1: main-loop request i gets `script[i]` (then
 * "Done."), each after `gate`; `shell` names the agent's shell tool for `{shell}` turns; a side
 * request (no tools) gets `sideText` (default "ok").
 */
export async function startChatCompletionsStandIn(
  script: ChatTurn[],
  options: { shell?: ShellTool; gate?: StandInGate; sideText?: string } = {},
): Promise<ChatCompletionsStandIn> {
  const shell = options.shell ?? NO_SHELL;
  const requests: StandInRequest[] = [];
  const all: StandInRequest[] = [];
  const server = await startStandInServer((request, res) => {
    all.push(request);
    if (!request.url.startsWith("/v1/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `no route ${request.url}` } }));
      return;
    }
    const tools = request.body["tools"];
    const main = Array.isArray(tools) && tools.length > 0;
    const turn: ChatTurn = main
      ? (script[requests.push(request) - 1] ?? { text: "Done." })
      : { text: options.sideText ?? "ok" };
    if (request.body["stream"] !== true) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(completionOf("text" in turn ? turn.text : (options.sideText ?? "ok"))));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const frame of framesOf(turn, requests.length, shell))
      res.write(`data: ${JSON.stringify(frame)}\n\n`);
    res.end("data: [DONE]\n\n");
  }, options.gate);
  return { url: server.url, requests, all, close: server.close };
}

/** What the stand-in was told after tools ran: the `tool` messages of the main-loop requests. */
export const chatToolOutputs = (api: ChatCompletionsStandIn): string[] =>
  api.requests.flatMap((r) =>
    ((r.body["messages"] as Array<Record<string, unknown>>) ?? [])
      .filter((m) => m["role"] === "tool")
      .map((m) => (typeof m["content"] === "string" ? m["content"] : JSON.stringify(m["content"]))),
  );
