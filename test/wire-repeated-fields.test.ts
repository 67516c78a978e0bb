/**
 * A query parameter or header that selects or authorizes something, sent twice, is refused with a
 * coded 400 rather than read as its first value: the Copilot endpoint's `event`, the gateway's and
 * the console's `Authorization`, the gateway's `traceparent`.
 */
import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { COPILOT_HOOK_PATH } from "@geode/contracts";
import { useTestEnv } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_TOKEN, type ConsolePlane, startConsolePlane } from "./console-support.js";
import { addAgent } from "./gateway-support.js";

const env = useTestEnv();
let plane: ConsolePlane;
let token = "";

beforeAll(async () => {
  plane = await startConsolePlane(env());
  token = await addAgent(env(), "twice");
}, 60_000);

afterAll(async () => {
  await plane?.stop();
});

/** One HTTP request with headers that may repeat (`fetch` would join them into one). */
function send(
  url: string,
  options: { method: string; headers: Record<string, string | readonly string[]>; body?: string },
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        text += c;
      });
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: text === "" ? null : JSON.parse(text) }),
      );
    });
    req.on("error", reject);
    for (const [k, v] of Object.entries(options.headers))
      req.setHeader(k, typeof v === "string" ? v : [...v]);
    req.end(options.body);
  });
}

const copilotBody = () =>
  JSON.stringify({ sessionId: randomUUID(), toolName: "bash", toolArgs: { command: "ls" } });

describe("a selecting field given twice", () => {
  it("the Copilot endpoint refuses a repeated event parameter", async () => {
    const r = await send(`${plane.gateway.url}${COPILOT_HOOK_PATH}?event=preToolUse&event=sessionEnd`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: copilotBody(),
    });
    expect(r).toEqual({
      status: 400,
      body: {
        error: {
          code: "invalid_request",
          message: "the event parameter is given more than once: name one Copilot CLI event",
        },
      },
    });
    // Once, it is answered.
    const once = await send(`${plane.gateway.url}${COPILOT_HOOK_PATH}?event=preToolUse`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: copilotBody(),
    });
    expect(once.status).toBe(200);
  });

  it("the gateway refuses two Authorization or traceparent headers", async () => {
    for (const [name, headers] of [
      ["authorization", { authorization: [`Bearer ${token}`, "Bearer other"] }],
      [
        "traceparent",
        {
          authorization: `Bearer ${token}`,
          traceparent: [
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-1af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
          ],
        },
      ],
    ] as const) {
      const r = await send(`${plane.gateway.url}${COPILOT_HOOK_PATH}?event=preToolUse`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: copilotBody(),
      });
      expect(r).toEqual({
        status: 400,
        body: { error: { code: "invalid_request", message: `the ${name} header is given more than once` } },
      });
    }
  });

  it("the console refuses two Authorization headers and a repeated query parameter", async () => {
    const r = await send(`${plane.console.url}/api/handlers`, {
      method: "GET",
      headers: { authorization: [`Bearer ${CONSOLE_TOKEN}`, "Bearer other"] },
    });
    expect(r).toEqual({
      status: 400,
      body: {
        error: { code: "invalid_request", message: "the authorization header is given more than once" },
      },
    });
    const q = await plane.api("/api/sessions?limit=1&limit=2");
    expect(q).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect((await plane.api("/api/handlers")).status).toBe(200);
  });
});
