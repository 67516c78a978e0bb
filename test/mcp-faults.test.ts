/**
 * An upstream MCP server that fails, through the whole MCP path (DESIGN sections 5 and 19): the
 * agent-gateway's `POST /v1/mcp`, the tool-executor with its receipts, the dispatcher, the
 * mcp-bridge as its own process, and a stdio server of the bridge's (test/fixtures/
 * faulty-mcp-server.mjs) that dies mid-call, hangs, floods, writes garbage or runs a mutation
 * whose every effect is a line in a count file. After each fault the plane serves a normal call.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensureBucket, requestJson } from "@geode/bus";
import { HookName, type McpServerState } from "@geode/contracts";
import { type SpawnedProcess, spawnService, waitFor } from "@geode/testing";
import { startToolExecutor, type ToolExecutor } from "@geode/tool-executor";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addAgent, useGatewayFixture } from "./gateway-support.js";
import { eventsOf } from "./verify-support.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/faulty-mcp-server.mjs", import.meta.url));
const CALL_TIMEOUT_MS = 1_500;
const RESULT_MAX_BYTES = 256 * 1024;
/** The meta key a client names its logical operation with (docs/mcp.md). */
const KEY = "geode/operation_key";

const fx = useGatewayFixture();
const dir = mkdtempSync(path.join(os.tmpdir(), "geode-mcp-faults-"));
let executor: ToolExecutor | undefined;
let bridge: SpawnedProcess | undefined;
const clients: Client[] = [];

const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l !== "")
    : [];
/** The effects a server's `write`, `crash` and `hang` had so far. */
const effects = (label: string) => lines(path.join(dir, `${label}.count`));
/** The pids of a server's starts so far. */
const starts = (label: string) => lines(path.join(dir, `${label}.starts`));

async function servers(): Promise<McpServerState[]> {
  const reply = await requestJson<{ servers?: McpServerState[] }>(
    fx.env().nc,
    fx.env().names.health("mcp-bridge"),
    {},
    { timeoutMs: 2_000 },
  );
  return reply.servers ?? [];
}

const connected = async (name: string) =>
  (await servers().catch(() => [])).some((s) => s.name === name && s.state === "connected");

async function addServer(name: string): Promise<void> {
  const kv = await ensureBucket(fx.env().nc, fx.env().names, "mcpServers");
  await kv.put(
    name,
    JSON.stringify({
      name,
      transport: "stdio",
      command: process.execPath,
      args: [FIXTURE, name],
      env: ["FAULTY_MCP_DIR"],
      created_at: Date.now(),
      updated_by: "test",
    }),
  );
}

const url = () => new URL(`${fx.gateway().url}/v1/mcp`);

async function client(token = fx.token(), mode: "auto" | "legacy" = "legacy"): Promise<Client> {
  const c = new Client({ name: "faults", version: "1.0.0" }, { versionNegotiation: { mode } });
  await c.connect(
    new StreamableHTTPClientTransport(url(), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  clients.push(c);
  return c;
}

type Result = { isError?: boolean; content: Array<{ type: string; text?: string }> };
const textOf = (r: Result) => r.content.map((c) => c.text ?? "").join("\n");

async function call(name: string, args: Record<string, unknown>, key?: unknown, c?: Client): Promise<Result> {
  const mcp = c ?? (await client());
  return (await mcp.callTool({
    name,
    arguments: args,
    ...(key === undefined ? {} : { _meta: { [KEY]: key } }),
  })) as Result;
}

const TOOLS = ["echo", "write", "crash", "hang", "flood", "garbage"];

/** Until the gateway lists every tool of `server` (after a restart they come back one by one). */
async function toolsBack(server: string): Promise<void> {
  const lister = await client();
  await waitFor(async () => {
    const { tools } = await lister.listTools();
    return TOOLS.every((t) => tools.some((x) => x.name === `${server}_${t}`));
  });
}

/** A normal call of each server answers as it should: the plane survived the fault. */
async function stillServing(): Promise<void> {
  for (const server of ["fa", "fb"]) {
    await waitFor(() => connected(server));
    await toolsBack(server);
    const text = `still ${randomUUID()}`;
    const r = await call(`${server}_echo`, { text });
    expect(r.isError).toBeFalsy();
    expect(r.content).toEqual([{ type: "text", text }]);
  }
}

/** A raw JSON-RPC POST of the agent (the SDK client would refuse some of these bodies itself). */
async function post(body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url(), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${fx.token()}`,
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  const json = text.startsWith("{")
    ? text
    : (text
        .split("\n")
        .find((l) => l.startsWith("data: "))
        ?.slice(6) ?? "null");
  return {
    status: res.status,
    body: JSON.parse(json) as { result?: Result; error?: { code: number; message: string } },
  };
}

beforeAll(async () => {
  const { nc, names } = fx.env();
  executor = await startToolExecutor({ nc, names, tools: [] });
  bridge = spawnService("services/mcp-bridge/src/main.ts", {
    ...fx.env().env,
    LOG_LEVEL: "info",
    FAULTY_MCP_DIR: dir,
    GEODE_MCP_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS),
    GEODE_MCP_RESULT_MAX_BYTES: String(RESULT_MAX_BYTES),
    GEODE_MCP_RESTART_MIN_MS: "100",
    GEODE_MCP_RESTART_MAX_MS: "500",
    // Results over 32 KiB travel through `{ns}_results`.
    GEODE_RESULT_INLINE_BYTES: String(32 * 1024),
  });
  await bridge.waitForOutput(/mcp-bridge started/);
  await addServer("fa");
  await addServer("fb");
  await toolsBack("fa");
  await toolsBack("fb");
}, 90_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await bridge?.stop();
  await executor?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("receipts of MCP calls", () => {
  it("a mutating call retried with the same operation key is replayed, not run again", async () => {
    const before = effects("fa").length;
    const key = `k-${randomUUID()}`;
    const first = await call("fa_write", { text: "once" }, key);
    expect(first).toEqual({ content: [{ type: "text", text: "wrote once" }] });
    const again = await call("fa_write", { text: "once" }, key);
    expect(again.content).toEqual([{ type: "text", text: "wrote once" }]);
    // The same in protocol 2026-07-28, where `_meta` also carries the request's envelope.
    const modern = await call("fa_write", { text: "once" }, key, await client(fx.token(), "auto"));
    expect(modern.content).toEqual([{ type: "text", text: "wrote once" }]);
    expect(effects("fa").length).toBe(before + 1);
    await stillServing();
  });

  it("without a key each call is its own operation; two agents never share a key", async () => {
    const before = effects("fa").length;
    await call("fa_write", { text: "a" });
    await call("fa_write", { text: "a" });
    expect(effects("fa").length).toBe(before + 2);
    const key = `shared-${randomUUID()}`;
    const other = await client(await addAgent(fx.env(), "desktop"));
    await waitFor(() => fx.gateway().agents() === 2);
    await call("fa_write", { text: "mine" }, key);
    const theirs = await call("fa_write", { text: "theirs" }, key, other);
    expect(theirs.content).toEqual([{ type: "text", text: "wrote theirs" }]);
    expect(effects("fa").slice(before + 2)).toEqual(["write mine", "write theirs"]);
  });

  it("a malformed operation key is -32602 and nothing runs", async () => {
    const before = effects("fa").length;
    for (const [key, says] of [
      [42, "not a string"],
      [null, "not a string"],
      ["", "is empty"],
      ["k".repeat(129), "over 128"],
      ["line\nbreak", "control characters"],
    ] as const) {
      const { body } = await post({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "fa_write", arguments: { text: "bad" }, _meta: { [KEY]: key } },
      });
      expect(body.error?.code).toBe(-32602);
      expect(body.error?.message).toContain(says);
      expect(body.error?.message).toContain(KEY);
    }
    expect(effects("fa").length).toBe(before);
    await stillServing();
  });
});

describe("an upstream that fails mid-call", () => {
  it("killed mid-call: indeterminate, the retry too, and it never runs twice", async () => {
    const before = effects("fa").length;
    const started = starts("fa").length;
    const key = `crash-${randomUUID()}`;
    const first = await call("fa_crash", { text: "boom" }, key);
    expect(first.isError).toBe(true);
    expect(textOf(first)).toMatch(/went away during the call .*outcome unknown/);
    expect(textOf(first)).toContain("exited with code 3");
    expect(effects("fa").slice(before)).toEqual(["crash boom"]);
    // Restarted by the bridge (its tools are gone meanwhile), the retry finds the receipt admitted.
    await waitFor(() => starts("fa").length > started);
    await stillServing();
    const retry = await call("fa_crash", { text: "boom" }, key);
    expect(retry.isError).toBe(true);
    expect(textOf(retry)).toMatch(/outcome is unknown/);
    expect(effects("fa").slice(before)).toEqual(["crash boom"]);
  });

  it("hanging past the call timeout: indeterminate, and the retry never runs it again", async () => {
    const before = effects("fa").length;
    const key = `hang-${randomUUID()}`;
    const pending = call("fa_hang", { text: "zzz" }, key);
    // While the upstream holds it, a retry runs nothing (in_progress, or indeterminate once given up).
    await waitFor(() => effects("fa").length > before);
    const during = await call("fa_hang", { text: "zzz" }, key);
    expect(during.isError).toBe(true);
    expect(textOf(during)).toMatch(/still running|outcome is unknown/);
    const first = await pending;
    expect(first.isError).toBe(true);
    expect(textOf(first)).toContain(`did not answer within ${CALL_TIMEOUT_MS} ms`);
    const retry = await call("fa_hang", { text: "zzz" }, key);
    expect(retry.isError).toBe(true);
    expect(textOf(retry)).toMatch(/outcome is unknown|still running/);
    expect(effects("fa").slice(before)).toEqual(["hang zzz"]);
    await stillServing();
  });

  it("down before the call is sent: an error that gives the admission back, so the retry runs", async () => {
    const before = effects("fb").length;
    const key = `down-${randomUUID()}`;
    // The call waits in PreToolUse while the server is killed and kept from starting again.
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let reached: () => void = () => undefined;
    const atHook = new Promise<void>((r) => {
      reached = r;
    });
    await fx.serve(HookName.PreToolUse, "hold", async (e) => {
      if ((e.payload as { tool_name?: string }).tool_name !== "fb_write") return null;
      reached();
      await held;
      return null;
    });
    const pending = call("fb_write", { text: "later" }, key);
    await atHook;
    writeFileSync(path.join(dir, "fb.down"), "");
    process.kill(Number(starts("fb").at(-1)), "SIGKILL");
    await waitFor(async () => !(await connected("fb")));
    release();
    const first = await pending;
    expect(first.isError).toBe(true);
    expect(effects("fb").length).toBe(before);
    rmSync(path.join(dir, "fb.down"));
    await waitFor(() => connected("fb"));
    await toolsBack("fb");
    const retry = await call("fb_write", { text: "later" }, key);
    expect(retry).toEqual({ content: [{ type: "text", text: "wrote later" }] });
    expect(effects("fb").slice(before)).toEqual(["write later"]);
    await stillServing();
  });
});

describe("bad output and load", () => {
  it("a result over GEODE_MCP_RESULT_MAX_BYTES is a clear error; one under it arrives whole", async () => {
    const whole = await call("fa_flood", { bytes: 100_000 });
    expect(whole.isError).toBeFalsy();
    expect(whole.content[0]?.text?.length).toBe(100_000);
    const over = await call("fa_flood", { bytes: RESULT_MAX_BYTES + 16 * 1024 });
    expect(over.isError).toBe(true);
    expect(textOf(over)).toContain(`over GEODE_MCP_RESULT_MAX_BYTES (${RESULT_MAX_BYTES})`);
    await stillServing();
  });

  it("a message far over the limit ends the connection (bounded) and the server restarts", async () => {
    const started = starts("fa").length;
    const flood = await call("fa_flood", { bytes: 8 * 1024 * 1024 });
    expect(flood.isError).toBe(true);
    expect(textOf(flood)).toMatch(/wrote a message over \d+ bytes/);
    await waitFor(() => starts("fa").length > started);
    await stillServing();
  });

  it("bytes that are not JSON-RPC fail the server at once; the bridge serves the others meanwhile", async () => {
    const started = starts("fa").length;
    const garbage = call("fa_garbage", {});
    const other = await call("fb_echo", { text: "unbothered" });
    expect(other.content).toEqual([{ type: "text", text: "unbothered" }]);
    const result = await garbage;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("not a JSON-RPC message");
    // Marked failed, with the reason, and restarted.
    await waitFor(async () =>
      (await eventsOf(fx.env().jsm, fx.env().names.eventsStream)).some((e) => {
        const p = e.payload as { server?: string; error?: string };
        return e.event === "mcp_server_failed" && p.server === "fa" && /not a JSON-RPC/.test(p.error ?? "");
      }),
    );
    await waitFor(() => starts("fa").length > started);
    await stillServing();
  });

  it("a 10 MiB argument is 413, 2 MiB a JSON-RPC error with a code, 200 KiB arrives whole", async () => {
    const huge = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "fa_echo", arguments: { text: "x".repeat(10 * 1024 * 1024) } },
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error?.code).toBe(-32600);
    // Under the body limit, over one bus message: refused before anything is admitted or run.
    const before = effects("fa").length;
    const big = await post({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "fa_write", arguments: { text: "y".repeat(2 * 1024 * 1024) } },
    });
    expect(big.body.error?.code).toBe(-32602);
    expect(big.body.error?.message).toMatch(
      /take \d+ bytes, over what one message of the plane's bus carries/,
    );
    expect(effects("fa").length).toBe(before);
    // Large, yet within a message: it arrives whole, and so does its echo (by reference).
    const text = "z".repeat(200 * 1024);
    expect((await call("fa_echo", { text })).content).toEqual([{ type: "text", text }]);
    await stillServing();
  });

  it("Mcp-Method or Mcp-Name disagreeing with the body is -32020; an unknown method -32601", async () => {
    const before = effects("fa").length;
    const meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
      "io.modelcontextprotocol/clientCapabilities": {},
    };
    const modern = { "mcp-protocol-version": "2026-07-28" };
    const body = {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "fa_write", arguments: { text: "header" }, _meta: meta },
    };
    const name = await post(body, { ...modern, "mcp-method": "tools/call", "mcp-name": "fa_echo" });
    expect(name.body.error?.code).toBe(-32020);
    const method = await post(body, { ...modern, "mcp-method": "tools/list", "mcp-name": "fa_write" });
    expect(method.body.error?.code).toBe(-32020);
    expect(effects("fa").length).toBe(before);
    const agreeing = await post(body, { ...modern, "mcp-method": "tools/call", "mcp-name": "fa_write" });
    expect(agreeing.body.result?.content).toEqual([{ type: "text", text: "wrote header" }]);
    const legacy = await post({ jsonrpc: "2.0", id: 3, method: "tools/nope", params: {} });
    expect(legacy.body.error?.code).toBe(-32601);
    const unknown = await post(
      { jsonrpc: "2.0", id: 4, method: "tools/nope", params: { _meta: meta } },
      { ...modern, "mcp-method": "tools/nope" },
    );
    expect(unknown.body.error?.code).toBe(-32601);
    await stillServing();
  });

  it("500 concurrent calls are all answered, each with its own result", async () => {
    const c = await client();
    const texts = Array.from({ length: 500 }, (_, i) => `n${i}-${randomUUID()}`);
    const results = await Promise.all(texts.map((text) => call("fa_echo", { text }, undefined, c)));
    expect(results.filter((r) => r.isError)).toEqual([]);
    expect(results.map((r) => r.content[0]?.text)).toEqual(texts);
    await stillServing();
  }, 120_000);
});
