/**
 * A scripted stand-in for the OpenAI Chat Completions API (`POST /v1/chat/completions`) on
 * loopback, for the agent CLIs that speak it: each request of the agent's main loop (one that
 * offers tools) gets the next turn of a script (a tool call, or text that ends the turn), streamed
 * as `chat.completion.chunk` SSE frames; side requests without tools (titles, summaries) get a
 * short text. Every request is recorded.
 */
import { type StandInGate, type StandInRequest, startStandInServer } from "./stand-in-server.js";

/** One scripted answer of the model: a tool call (its name and arguments), or text that ends the turn. */
export type ChatTurn = { call: { name: string; arguments: Record<string, unknown> } } | { text: string };

/** The stand-in, every request it was sent, and the main-loop requests among them. */
export interface ChatCompletionsStandIn {
  readonly url: string;
  readonly requests: StandInRequest[];
  /** The requests that offered tools (the agent's main loop), each answered with the next turn. */
  readonly turns: StandInRequest[];
  close(): Promise<void>;
}

function framesOf(turn: ChatTurn, n: number): Array<Record<string, unknown>> {
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
              {
                index: 0,
                id: `call_standin_${n}`,
                type: "function",
                function: { name: turn.call.name, arguments: JSON.stringify(turn.call.arguments) },
              },
            ],
          },
          null,
        );
  return [
    first,
    choice({}, "text" in turn ? "stop" : "tool_calls"),
    { ...base, choices: [], usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 } },
  ];
}

/**
 * Serves `POST /v1/chat/completions` on 127.0.0.1: main-loop request i gets `script[i]` (then
 * "Done."), each after `gate`; a request without tools gets `sideText`.
 */
export async function startChatCompletionsStandIn(
  script: ChatTurn[],
  options: { gate?: StandInGate; sideText?: string } = {},
): Promise<ChatCompletionsStandIn> {
  const requests: StandInRequest[] = [];
  const turns: StandInRequest[] = [];
  const server = await startStandInServer((request, res) => {
    requests.push(request);
    if (!request.url.startsWith("/v1/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `no route ${request.url}` } }));
      return;
    }
    const tools = request.body["tools"];
    const main = Array.isArray(tools) && tools.length > 0;
    const i = main ? turns.push(request) - 1 : -1;
    const turn: ChatTurn = main ? (script[i] ?? { text: "Done." }) : { text: options.sideText ?? "Title" };
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const frame of framesOf(turn, requests.length)) res.write(`data: ${JSON.stringify(frame)}\n\n`);
    res.end("data: [DONE]\n\n");
  }, options.gate);
  return { url: server.url, requests, turns, close: server.close };
}

/** The tool results the agent sent back to the model (its `role: "tool"` messages' text). */
export const toolMessages = (api: ChatCompletionsStandIn): string[] =>
  api.turns.flatMap((r) =>
    ((r.body["messages"] as Array<Record<string, unknown>>) ?? [])
      .filter((m) => m["role"] === "tool")
      .map((m) => (typeof m["content"] === "string" ? m["content"] : JSON.stringify(m["content"]))),
  );
