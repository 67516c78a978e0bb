/**
 * The LLM gateway (DESIGN section 21) with real parts: the agent-gateway over HTTP on loopback,
 * NATS, and scripted provider stand-ins playing OpenAI (Responses, Chat Completions), Anthropic
 * Messages and Gemini. Each call's token is swapped for the provider key, streams pass chunk by
 * chunk, usage and cost land in `llm_call_*` events, budgets refuse in the provider's own shape.
 */
import type { ServerResponse } from "node:http";
import { budgetSpendKey, type EventEnvelope } from "@geode/contracts";
import { BudgetStore } from "@geode/state";
import { waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startChatCompletionsStandIn } from "./chat-completions-stand-in.js";
import { startAnthropicStandIn } from "./claude-code-support.js";
import { startResponsesStandIn } from "./codex-support.js";
import { startGeminiStandIn } from "./gemini-support.js";
import { expectProviderKeyNowhere, PROVIDER_KEY, readChunks, useLlmFixture } from "./llm-support.js";
import { type StandInRequest, startStandInServer } from "./stand-in-server.js";

const fx = useLlmFixture({ timeoutMs: 1_500, maxBodyBytes: 12 * 1024 * 1024 });

let responses: Awaited<ReturnType<typeof startResponsesStandIn>>;
let chat: Awaited<ReturnType<typeof startChatCompletionsStandIn>>;
let anthropic: Awaited<ReturnType<typeof startAnthropicStandIn>>;
let gemini: Awaited<ReturnType<typeof startGeminiStandIn>>;
/** A provider whose answers each test scripts (faults, gated streams). */
let scripted: Awaited<ReturnType<typeof startStandInServer>>;
let answer: (req: StandInRequest, res: ServerResponse) => void = (_q, res) => res.end();
const seen: StandInRequest[] = [];

beforeAll(async () => {
  responses = await startResponsesStandIn([], (r) => void seen.push(r));
  chat = await startChatCompletionsStandIn([], { gate: (r) => void seen.push(r) });
  anthropic = await startAnthropicStandIn([], (r) => void seen.push(r));
  gemini = await startGeminiStandIn([], (r) => void seen.push(r));
  scripted = await startStandInServer((req, res) => {
    seen.push(req);
    answer(req, res);
  });
  await fx.provider({ name: "oai", kind: "openai", base_url: `${responses.url}/v1` });
  await fx.provider({ name: "chat", kind: "openai", base_url: `${chat.url}/v1` });
  await fx.provider({ name: "claude", kind: "anthropic", base_url: anthropic.url, models: ["claude-*"] });
  await fx.provider({ name: "goog", kind: "gemini", base_url: gemini.url });
  await fx.provider({ name: "faulty", kind: "openai", base_url: `${scripted.url}/v1` });
  await fx.price({ model: "gpt-5*", input: 2, output: 10, cached: 0.5 });
  await fx.price({ model: "claude-*", input: 3, output: 15 });
  await fx.price({ model: "gemini-2.5-pro", input: 1.25, output: 10 });
}, 60_000);

afterAll(async () => {
  await Promise.all([responses, chat, anthropic, gemini, scripted].map((s) => s?.close()));
});

const gw = () => fx.gateway().url;
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${gw()}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
const bearer = () => ({ authorization: `Bearer ${fx.token()}` });

/** The ended (or failed) event of the call made with session header `session`. */
async function endOf(session: string, event = "llm_call_ended"): Promise<EventEnvelope> {
  const found = await waitFor(async () =>
    (await fx.llmEvents()).find((e) => e.event === event && e.correlation.session_id === session),
  );
  if (!found) throw new Error(`no ${event} of ${session}`);
  return found;
}

describe("provider endpoints", () => {
  it("OpenAI Responses, streamed: the key swapped, the stream passed through, usage and cost recorded", async () => {
    seen.length = 0;
    const res = await post(
      "/v1/llm/oai/responses",
      { model: "gpt-5-codex", stream: true, input: "the secret prompt text" },
      { ...bearer(), "x-geode-session": "s-responses" },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const { text } = await readChunks(res);
    expect(text).toContain("event: response.completed");
    expect(seen[0]?.url).toBe("/v1/responses");
    expect(seen[0]?.headers?.["authorization"]).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(JSON.stringify(seen[0]?.headers)).not.toContain(fx.token());
    const ended = await endOf("s-responses");
    expect(ended.source).toBe("agent-gateway");
    expect(ended.correlation.llm_call_id).not.toBe("");
    expect(ended.payload).toMatchObject({
      provider: "oai",
      model: "gpt-5-codex",
      input_tokens: 12,
      cached_input_tokens: 0,
      output_tokens: 8,
      status: 200,
      stream: true,
    });
    // 12 input at $2/M + 8 output at $10/M.
    expect(ended.payload["cost_usd"]).toBeCloseTo((12 * 2 + 8 * 10) / 1e6, 12);
    const started = (await fx.llmEvents()).find(
      (e) => e.event === "llm_call_started" && e.correlation.llm_call_id === ended.correlation.llm_call_id,
    );
    expect(started?.payload).toEqual({
      agent: "laptop",
      provider: "oai",
      model: "gpt-5-codex",
      stream: true,
    });
    expect(JSON.stringify(await fx.llmEvents())).not.toContain("the secret prompt text");
  });

  it("OpenAI Chat Completions, streamed and not: usage from the usage chunk and from the body", async () => {
    const streamed = await post(
      "/v1/llm/chat/chat/completions",
      { model: "gpt-5-mini", stream: true, messages: [{ role: "user", content: "hi" }] },
      { ...bearer(), "x-geode-session": "s-chat-stream" },
    );
    expect((await readChunks(streamed)).text).toContain("data: [DONE]");
    expect((await endOf("s-chat-stream")).payload).toMatchObject({
      input_tokens: 12,
      output_tokens: 8,
      stream: true,
    });
    const whole = await post(
      "/v1/llm/chat/chat/completions",
      { model: "gpt-5-mini", messages: [{ role: "user", content: "hi" }] },
      { ...bearer(), "x-geode-session": "s-chat-json" },
    );
    expect(((await whole.json()) as { object: string }).object).toBe("chat.completion");
    expect((await endOf("s-chat-json")).payload).toMatchObject({
      input_tokens: 12,
      output_tokens: 8,
      stream: false,
    });
  });

  it("Anthropic Messages: the token comes as x-api-key and leaves as the provider key; streamed usage summed", async () => {
    seen.length = 0;
    const res = await post(
      "/v1/llm/claude/v1/messages",
      {
        model: "claude-sonnet-4-5",
        stream: true,
        max_tokens: 100,
        messages: [{ role: "user", content: "hi" }],
      },
      { "x-api-key": fx.token(), "anthropic-version": "2023-06-01", "x-geode-session": "s-claude" },
    );
    expect(res.status).toBe(200);
    expect((await readChunks(res)).text).toContain("event: message_stop");
    expect(seen[0]?.headers?.["x-api-key"]).toBe(PROVIDER_KEY);
    expect(seen[0]?.headers?.["anthropic-version"]).toBe("2023-06-01");
    const ended = await endOf("s-claude");
    expect(ended.payload).toMatchObject({ provider: "claude", input_tokens: 12, output_tokens: 8 });
    expect(ended.payload["cost_usd"]).toBeCloseTo((12 * 3 + 8 * 15) / 1e6, 12);
  });

  it("Gemini: ?key= and x-goog-api-key, streamGenerateContent and generateContent", async () => {
    seen.length = 0;
    const res = await post(
      `/v1/llm/goog/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=${fx.token()}`,
      { contents: [{ role: "user", parts: [{ text: "hi" }] }], tools: [{}] },
      { "x-geode-session": "s-gemini" },
    );
    expect(res.status).toBe(200);
    expect((await readChunks(res)).text).toContain("usageMetadata");
    expect(seen[0]?.url).toBe("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse");
    expect(seen[0]?.headers?.["x-goog-api-key"]).toBe(PROVIDER_KEY);
    expect((await endOf("s-gemini")).payload).toMatchObject({
      model: "gemini-2.5-pro",
      input_tokens: 12,
      output_tokens: 8,
      stream: true,
    });
    const whole = await post(
      "/v1/llm/goog/v1beta/models/gemini-2.5-pro:generateContent",
      { contents: [{ role: "user", parts: [{ text: "hi" }] }] },
      { "x-goog-api-key": fx.token(), "x-geode-session": "s-gemini-json" },
    );
    expect(whole.status).toBe(200);
    expect((await endOf("s-gemini-json")).payload).toMatchObject({
      input_tokens: 12,
      output_tokens: 8,
      stream: false,
    });
  });

  it("passes each SSE chunk on as it comes, before the provider sends the next", async () => {
    let release: () => void = () => undefined;
    const second = new Promise<void>((r) => {
      release = r;
    });
    answer = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "one" } }] })}\n\n`);
      void second.then(() => {
        res.write(
          `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 3 } })}\n\n`,
        );
        res.end("data: [DONE]\n\n");
      });
    };
    const res = await post(
      "/v1/llm/faulty/chat/completions",
      { model: "gpt-5-mini", stream: true },
      { ...bearer(), "x-geode-session": "s-gated" },
    );
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    // The first chunk reached the agent while the provider still holds the second.
    expect(first).toContain('"one"');
    release();
    let rest = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toContain("[DONE]");
    expect((await endOf("s-gated")).payload).toMatchObject({ input_tokens: 5, output_tokens: 3 });
  });
});

describe("refusals in the provider's shape", () => {
  it("a missing or unknown token is 401 and nothing reaches the provider", async () => {
    seen.length = 0;
    const none = await post("/v1/llm/oai/responses", { model: "gpt-5" });
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ error: { code: "invalid_api_key", type: "invalid_api_key" } });
    const wrong = await post(
      "/v1/llm/claude/v1/messages",
      { model: "claude-x" },
      { "x-api-key": "geode_wrong" },
    );
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ type: "error", error: { type: "authentication_error" } });
    expect(seen).toHaveLength(0);
  });

  it("an unknown provider is 404, a model the provider does not offer 403, a body not JSON 400", async () => {
    const unknown = await post("/v1/llm/nope/responses", { model: "gpt-5" }, bearer());
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: "unknown_provider" } });
    const model = await post("/v1/llm/claude/v1/messages", { model: "gpt-5" }, { "x-api-key": fx.token() });
    expect(model.status).toBe(403);
    expect(await model.json()).toMatchObject({ type: "error", error: { type: "permission_error" } });
    const garbage = await post("/v1/llm/oai/responses", "{not json", bearer());
    expect(garbage.status).toBe(400);
  });

  it("a 10 MiB request goes through; one over the limit is 413", async () => {
    const big = "x".repeat(10 * 1024 * 1024);
    const ok = await post(
      "/v1/llm/oai/responses",
      { model: "gpt-5", input: big },
      { ...bearer(), "x-geode-session": "s-big" },
    );
    expect(ok.status).toBe(200);
    await readChunks(ok);
    expect((await endOf("s-big")).payload).toMatchObject({ status: 200 });
    const over = await post("/v1/llm/oai/responses", { model: "gpt-5", input: `${big}${big}` }, bearer());
    expect(over.status).toBe(413);
    expect(await over.json()).toMatchObject({ error: { code: "request_too_large" } });
  }, 60_000);
});

describe("faults", () => {
  it("a provider that is down: 502 in its shape and llm_call_failed", async () => {
    await fx.provider({ name: "down", kind: "anthropic", base_url: "http://127.0.0.1:1" });
    const res = await post(
      "/v1/llm/down/v1/messages",
      { model: "claude-x" },
      { "x-api-key": fx.token(), "x-geode-session": "s-down" },
    );
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "api_error" } });
    expect((await endOf("s-down", "llm_call_failed")).payload).toMatchObject({
      provider: "down",
      status: 502,
    });
  });

  it("a 500 and its body are passed on as the provider gave them, recorded as failed", async () => {
    answer = (_q, res) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "upstream broke", type: "server_error" } }));
    };
    const res = await post(
      "/v1/llm/faulty/responses",
      { model: "gpt-5" },
      { ...bearer(), "x-geode-session": "s-500" },
    );
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: { message: "upstream broke", type: "server_error" } });
    expect((await endOf("s-500", "llm_call_failed")).payload).toMatchObject({
      status: 500,
      error: "provider faulty answered 500",
    });
  });

  it("garbage with a 200 reaches the agent as it came; the call is recorded with no usage", async () => {
    answer = (_q, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end("<html>garbage");
    };
    const res = await post(
      "/v1/llm/faulty/responses",
      { model: "gpt-5" },
      { ...bearer(), "x-geode-session": "s-garbage" },
    );
    expect(await res.text()).toBe("<html>garbage");
    expect((await endOf("s-garbage")).payload).toMatchObject({
      input_tokens: 0,
      output_tokens: 0,
      status: 200,
    });
    expect(fx.logLines.some((l) => l.msg === "the provider's answer carried no usage")).toBe(true);
  });

  it("a cut stream is cut for the agent too, and recorded as failed with the usage seen", async () => {
    await fx.provider({ name: "cutter", kind: "anthropic", base_url: scripted.url });
    answer = (req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(
        `event: message_start\ndata: ${JSON.stringify({ type: "message_start", message: { usage: { input_tokens: 40, output_tokens: 1 } } })}\n\n`,
      );
      setTimeout(() => res.socket?.destroy(), 50);
      void req;
    };
    const res = await post(
      "/v1/llm/cutter/v1/messages",
      { model: "claude-x", stream: true },
      { "x-api-key": fx.token(), "x-geode-session": "s-cut" },
    );
    expect(res.status).toBe(200);
    const cut = await readChunks(res).then(
      () => null,
      (err: unknown) => err,
    );
    expect(cut).toBeInstanceOf(Error);
    const failed = await endOf("s-cut", "llm_call_failed");
    expect(failed.payload).toMatchObject({ input_tokens: 40, error: "the provider's stream was cut" });
  });

  it("a provider slower than the timeout: 504", async () => {
    answer = () => undefined; // never answers
    const res = await post(
      "/v1/llm/faulty/responses",
      { model: "gpt-5" },
      { ...bearer(), "x-geode-session": "s-slow" },
    );
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({ error: { code: "provider_timeout" } });
    expect((await endOf("s-slow", "llm_call_failed")).payload).toMatchObject({ status: 504 });
  });

  it("the gateway keeps serving after all of that", async () => {
    const res = await post(
      "/v1/llm/oai/responses",
      { model: "gpt-5", stream: true },
      { ...bearer(), "x-geode-session": "s-after" },
    );
    expect(res.status).toBe(200);
    await readChunks(res);
    await endOf("s-after");
  });
});

describe("budgets", () => {
  it("a small session budget lets the first call through and refuses the next with 429, Retry-After and cost_limit_exceeded", async () => {
    await fx.budget("session.s-budget", { limit_tokens: 15, window: "session" });
    const first = await post(
      "/v1/llm/oai/responses",
      { model: "gpt-5", stream: true },
      { ...bearer(), "x-geode-session": "s-budget" },
    );
    expect(first.status).toBe(200);
    await readChunks(first);
    const second = await post(
      "/v1/llm/oai/responses",
      { model: "gpt-5", stream: true },
      { ...bearer(), "x-geode-session": "s-budget" },
    );
    expect(second.status).toBe(429);
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(second.headers.get("x-should-retry")).toBe("false");
    expect(await second.json()).toMatchObject({
      error: { code: "cost_limit_exceeded", type: "cost_limit_exceeded" },
    });
    const events = (await fx.llmEvents()).filter((e) => e.correlation.session_id === "s-budget");
    expect(events.map((e) => e.event)).toEqual([
      "llm_call_started",
      "llm_call_ended",
      "cost_warning",
      "cost_limit_exceeded",
    ]);
    expect(events[3]?.payload).toMatchObject({
      budget: "session.s-budget",
      reason: "limit_tokens",
      used_tokens: 20,
      limit_tokens: 15,
    });
  });

  it("an agent's USD budget refuses in Anthropic's and Gemini's shapes", async () => {
    await fx.budget("agent.laptop", { limit_usd: 0.000001, window: "1h" });
    try {
      // The first call starts with the budget unspent and completes; it spends it.
      const first = await post(
        "/v1/llm/claude/v1/messages",
        { model: "claude-x" },
        { "x-api-key": fx.token() },
      );
      expect(first.status).toBe(200);
      await first.text();
      const claude = await post(
        "/v1/llm/claude/v1/messages",
        { model: "claude-x" },
        { "x-api-key": fx.token() },
      );
      expect(claude.status).toBe(429);
      expect(await claude.json()).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
      const goog = await post(
        "/v1/llm/goog/v1beta/models/gemini-2.5-pro:generateContent",
        {},
        { "x-goog-api-key": fx.token() },
      );
      expect(goog.status).toBe(429);
      expect(await goog.json()).toMatchObject({ error: { code: 429, status: "RESOURCE_EXHAUSTED" } });
    } finally {
      await (await BudgetStore.open({ nc: fx.env().nc, names: fx.env().names })).remove("agent.laptop");
      await new Promise((r) => setTimeout(r, 300));
    }
  });

  it("concurrent calls racing one budget: all that started before it was spent complete, each counted once", async () => {
    await fx.budget("session.s-race", { limit_tokens: 30, window: "session" });
    const calls = await Promise.all(
      Array.from({ length: 6 }, () =>
        post(
          "/v1/llm/oai/responses",
          { model: "gpt-5", stream: true },
          { ...bearer(), "x-geode-session": "s-race" },
        ).then(async (r) => ({ status: r.status, text: await r.text() })),
      ),
    );
    const through = calls.filter((c) => c.status === 200);
    expect(through.length + calls.filter((c) => c.status === 429).length).toBe(6);
    for (const c of through) expect(c.text).toContain("response.completed");
    const kv = await (await import("@geode/bus")).ensureBucket(fx.env().nc, fx.env().names, "llmSpend");
    const spent = await waitFor(async () => {
      const v = (await kv.get(budgetSpendKey("session.s-race", "session", 0)))?.json<{
        calls: number;
        tokens: number;
      }>();
      return v && v.calls === through.length ? v : undefined;
    });
    expect(spent?.tokens).toBe(20 * through.length);
    const after = await post(
      "/v1/llm/oai/responses",
      { model: "gpt-5" },
      { ...bearer(), "x-geode-session": "s-race" },
    );
    expect(after.status).toBe(429);
  });

  it("requests per minute: the next call over the rate is 429 rate_limit_exceeded", async () => {
    await fx.budget("session.s-rpm", { requests_per_minute: 2, window: "1h" });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await post(
        "/v1/llm/oai/responses",
        { model: "gpt-5" },
        { ...bearer(), "x-geode-session": "s-rpm" },
      );
      statuses.push(r.status);
      if (r.status === 429) expect(await r.json()).toMatchObject({ error: { code: "rate_limit_exceeded" } });
      else await r.text();
    }
    expect(statuses).toEqual([200, 200, 429]);
  });
});

describe("the provider key", () => {
  it("appears in no event, bucket, log line or reply", async () => {
    await expectProviderKeyNowhere(fx);
    const res = await post("/v1/llm/faulty/responses", { model: "gpt-5" }, bearer());
    expect(await res.text()).not.toContain(PROVIDER_KEY);
  });
});
