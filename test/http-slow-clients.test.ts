import net from "node:net";
import { GEODE_BIN, type SpawnedProcess, spawnProgram, spawnService, useTestEnv } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addAgent } from "./gateway-support.js";

// Slow clients against the two HTTP servers, as real processes with their timeouts set through the
// environment: a socket that trickles its headers, one that trickles its body, one left idle after
// a request, while normal requests keep working and a long-lived answer is not cut off.

const HEADERS_MS = 1_000;
const REQUEST_MS = 2_000;
const IDLE_MS = 1_000;
/** How much later than its limit a socket may close on a busy two-core machine. */
const SLACK_MS = 3_000;
const CONSOLE_TOKEN = "slow-clients-console-token-0123456789";

const env = useTestEnv();
const procs: SpawnedProcess[] = [];
let gateway = "";
let consoleUrl = "";
let agentToken = "";

interface Closed {
  afterMs: number;
  response: string;
}

/**
 * Opens a raw socket to `url`, writes `first`, then `next(i)` every 200 ms (nothing when it returns
 * ""), and says when the server closed it and what it answered; rejects if it is still open after
 * `giveUpMs`.
 */
function trickle(
  url: string,
  first: string,
  next: (i: number) => string,
  giveUpMs = 10_000,
): Promise<Closed> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const socket = net.connect(Number(port), hostname);
    let response = "";
    let i = 0;
    const timer = setInterval(() => {
      const chunk = next(i++);
      if (chunk !== "" && !socket.destroyed) socket.write(chunk);
    }, 200);
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `the server kept the socket open for ${giveUpMs} ms (answered ${JSON.stringify(response)})`,
        ),
      );
    }, giveUpMs);
    socket.on("data", (d: Buffer) => {
      response += d.toString("latin1");
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ afterMs: Date.now() - t0, response });
    });
    socket.write(first);
  });
}

const host = (url: string) => new URL(url).host;

/**
 * The three slow clients against one server, and `normal()` run while they trickle; `post` is a
 * request line and headers whose body the server reads (it is trickled, one space at a time).
 */
async function slowClients(url: string, post: string, normal: () => Promise<void>) {
  const headers = trickle(
    url,
    `GET /healthz HTTP/1.1\r\nHost: ${host(url)}\r\n`,
    (i) => `X-Slow-${i}: 1\r\n`,
  );
  const body = trickle(
    url,
    `${post}\r\nHost: ${host(url)}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
    () => " ",
  );
  // A complete request on a keep-alive socket, then nothing: closed once it has been idle too long.
  const idle = trickle(url, `GET /healthz HTTP/1.1\r\nHost: ${host(url)}\r\n\r\n`, () => "");
  await normal();
  return { headers: await headers, body: await body, idle: await idle };
}

function expectClosedInTime(closed: Closed, limitMs: number, answer: RegExp): void {
  expect(closed.response).toMatch(answer);
  expect(closed.afterMs).toBeGreaterThanOrEqual(limitMs - 100);
  expect(closed.afterMs).toBeLessThan(limitMs + SLACK_MS);
}

const timeouts = (prefix: string) => ({
  [`${prefix}_HEADERS_TIMEOUT_MS`]: String(HEADERS_MS),
  [`${prefix}_REQUEST_TIMEOUT_MS`]: String(REQUEST_MS),
  [`${prefix}_IDLE_TIMEOUT_MS`]: String(IDLE_MS),
});

beforeAll(async () => {
  const gw = spawnService("services/agent-gateway/src/main.ts", {
    ...env().env,
    GEODE_GATEWAY_ADDR: "127.0.0.1:0",
    ...timeouts("GEODE_GATEWAY"),
    LOG_LEVEL: "info",
  });
  const con = spawnProgram(process.execPath, [GEODE_BIN, "console", "--port", "0"], {
    ...env().env,
    GEODE_CONSOLE_TOKEN: CONSOLE_TOKEN,
    ...timeouts("GEODE_CONSOLE"),
  });
  procs.push(gw, con);
  await Promise.all([gw.waitForOutput(/agent-gateway listening on/), con.waitForOutput(/console on http/)]);
  gateway = /agent-gateway listening on (http:\/\/[0-9.:]+)/.exec(gw.output())?.[1] ?? "";
  // A known agent, so the gateway reads the body instead of refusing the request at once.
  agentToken = await addAgent(env(), "slow-client");
  consoleUrl = /console on (http:\/\/[0-9.:]+)/.exec(con.output())?.[1] ?? "";
}, 120_000);

afterAll(async () => {
  for (const p of procs) await p.stop("SIGTERM");
});

describe("slow clients", () => {
  it("the agent gateway closes a trickled header or body with 408 in its configured time, and an idle socket after its idle time, while normal requests work", async () => {
    const post = `POST /v1/claude-code/hook HTTP/1.1\r\nAuthorization: Bearer ${agentToken}`;
    const closed = await slowClients(gateway, post, async () => {
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${gateway}/healthz`);
        expect(res.status).toBe(200);
        await new Promise((r) => setTimeout(r, 200));
      }
    });
    expectClosedInTime(closed.headers, HEADERS_MS, /^HTTP\/1\.1 408 /);
    expectClosedInTime(closed.body, REQUEST_MS, /^HTTP\/1\.1 408 /);
    expectClosedInTime(closed.idle, IDLE_MS, /^HTTP\/1\.1 200 OK/);
  }, 60_000);

  it("the console does the same, and a live timeline stays open past the request timeout", async () => {
    const auth = { authorization: `Bearer ${CONSOLE_TOKEN}` };
    const live = await fetch(`${consoleUrl}/api/runs/slow-run/timeline/stream`, { headers: auth });
    expect(live.status).toBe(200);
    const reader = live.body?.getReader();
    const closed = await slowClients(consoleUrl, "POST /api/login HTTP/1.1", async () => {
      const me = await fetch(`${consoleUrl}/api/me`, { headers: auth });
      expect(me.status).toBe(200);
    });
    expectClosedInTime(closed.headers, HEADERS_MS, /^HTTP\/1\.1 408 /);
    expectClosedInTime(closed.body, REQUEST_MS, /^HTTP\/1\.1 408 /);
    // /healthz is not a console route: the idle socket got its answer (404), then was closed.
    expectClosedInTime(closed.idle, IDLE_MS, /^HTTP\/1\.1 404 /);
    // The stream has been open longer than the request timeout: still readable.
    const first = await reader?.read();
    expect(new TextDecoder().decode(first?.value)).toContain(": timeline");
    await reader?.cancel();
  }, 60_000);

  it("a headers timeout over the request timeout is a configuration error naming both", async () => {
    const bad = spawnService("services/agent-gateway/src/main.ts", {
      ...env().env,
      GEODE_GATEWAY_ADDR: "127.0.0.1:0",
      GEODE_GATEWAY_HEADERS_TIMEOUT_MS: "5000",
      GEODE_GATEWAY_REQUEST_TIMEOUT_MS: "1000",
    });
    procs.push(bad); // stopped at the end should it start after all
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toMatch(
      /GEODE_GATEWAY_HEADERS_TIMEOUT_MS \(5000\) must not exceed GEODE_GATEWAY_REQUEST_TIMEOUT_MS \(1000\)/,
    );
  }, 60_000);
});
