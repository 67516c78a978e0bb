/**
 * The LLM gateway's connections to a provider (DESIGN section 21) with real parts: the
 * agent-gateway over HTTP on loopback, NATS, and a raw HTTP provider stand-in that sees which
 * connection each call comes on. Calls share kept connections; a kept connection the provider
 * closes as a call goes out is retried once on a fresh one, and only when nothing came back.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useLlmFixture } from "./llm-support.js";

const fx = useLlmFixture({ timeoutMs: 5_000 });

/** What the provider does with a call that comes on a connection that served one before. */
let onReused: "answer" | "drop" | "cut" = "answer";
let requests = 0;
const connections = new Set<Socket>();
/** The connection of each call, in order. */
const calls: Socket[] = [];
const served = new WeakMap<Socket, number>();
let provider: Server;

const usage = { input_tokens: 12, output_tokens: 8 };
const stream = [
  `event: response.output_text.delta\ndata: ${JSON.stringify({ type: "response.output_text.delta", delta: "hello" })}\n\n`,
  `event: response.completed\ndata: ${JSON.stringify({ type: "response.completed", response: { usage } })}\n\n`,
];

beforeAll(async () => {
  provider = createServer((req, res) => {
    requests++;
    const socket = req.socket;
    connections.add(socket);
    calls.push(socket);
    const before = served.get(socket) ?? 0;
    served.set(socket, before + 1);
    req.resume();
    req.on("end", () => {
      if (before > 0 && onReused === "drop") return void socket.destroy();
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (before > 0 && onReused === "cut") {
        res.write(stream[0]);
        setTimeout(() => socket.destroy(), 50);
        return;
      }
      res.end(stream.join(""));
    });
  });
  await new Promise<void>((r) => provider.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  await fx.provider({ name: "kept", kind: "openai", base_url: `${url}/v1` });
}, 60_000);

afterAll(() => {
  provider.closeAllConnections();
  provider.close();
});

const call = (session: string) =>
  fetch(`${fx.gateway().url}/v1/llm/kept/v1/responses`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${fx.token()}`,
      "x-geode-session": session,
    },
    body: JSON.stringify({ model: "gpt-5", stream: true, input: "hi" }),
  });

const eventsOf = async (session: string) =>
  (await fx.llmEvents()).filter((e) => e.correlation.session_id === session);

describe("connections to the provider", () => {
  it("calls one after another share one kept connection", async () => {
    onReused = "answer";
    const [conns, first] = [connections.size, calls.length];
    for (const s of ["k-1", "k-2", "k-3"]) {
      const res = await call(s);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(stream.join(""));
    }
    expect(new Set(calls.slice(first)).size).toBe(1);
    expect(connections.size - conns).toBeLessThanOrEqual(1);
  }, 60_000);

  it("a kept connection closed as the call goes out: sent again on a fresh one, recorded once", async () => {
    onReused = "drop";
    const [conns, reqs] = [connections.size, requests];
    const res = await call("k-drop");
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(stream.join(""));
    // The dropped try and the one answered, on a new connection.
    expect(requests - reqs).toBe(2);
    expect(connections.size - conns).toBe(1);
    await waitFor(async () => (await eventsOf("k-drop")).some((e) => e.event === "llm_call_ended"));
    const events = await eventsOf("k-drop");
    expect(events.filter((e) => e.event === "llm_call_started")).toHaveLength(1);
    expect(events.filter((e) => e.event === "llm_call_ended")).toHaveLength(1);
    expect(events.find((e) => e.event === "llm_call_ended")?.payload).toMatchObject(usage);
  }, 60_000);

  it("a kept connection cut after the answer began: no second try, the agent's stream is cut", async () => {
    onReused = "answer";
    expect((await call("k-warm")).status).toBe(200);
    onReused = "cut";
    const reqs = requests;
    const res = await call("k-cut");
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    expect(requests - reqs).toBe(1);
    await waitFor(async () => (await eventsOf("k-cut")).some((e) => e.event === "llm_call_failed"));
    expect((await eventsOf("k-cut")).some((e) => e.event === "llm_call_ended")).toBe(false);
  }, 60_000);
});
