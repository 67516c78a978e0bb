/**
 * The mcp-bridge (DESIGN section 19) against real MCP servers from npm (server-filesystem,
 * server-everything over stdio and streamable HTTP) and a small fixture server that changes its
 * tool list: records in KV `{ns}_mcp_servers`, tools in `{ns}_tools`, calls through the real
 * tool-executor, the forward of resources and prompts, and `POST /v1/mcp` with the SDK's client.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { ensureBucket, requestJson } from "@geode/bus";
import type { EventEnvelope, McpServerRecord, ToolDefinition, ToolExecuteReply } from "@geode/contracts";
import { type McpBridge, startMcpBridge } from "@geode/mcp-bridge";
import { createToolClient } from "@geode/runtime";
import { McpServerStore, ToolStore } from "@geode/state";
import { processAlive, REPO_ROOT, waitFor } from "@geode/testing";
import { startToolExecutor, type ToolExecutor } from "@geode/tool-executor";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGatewayFixture } from "./gateway-support.js";
import { keptLogger } from "./policy-support.js";
import { eventsOf } from "./verify-support.js";

const require = createRequire(import.meta.url);
/** The file a package's bin runs, as `node <file>` starts it. */
function binOf(pkg: string): string {
  const manifest = require.resolve(`${pkg}/package.json`);
  const bin = (JSON.parse(readFileSync(manifest, "utf8")) as { bin: Record<string, string> }).bin;
  return path.join(path.dirname(manifest), Object.values(bin)[0] ?? "");
}
const FS_BIN = binOf("@modelcontextprotocol/server-filesystem");
const EVERYTHING_BIN = binOf("@modelcontextprotocol/server-everything");
const CHANGING_BIN = path.join(REPO_ROOT, "test/fixtures/mcp-changing-server.mjs");
const MODERN_BIN = path.join(REPO_ROOT, "test/fixtures/mcp-modern-http-server.mjs");

const fx = useGatewayFixture();
const logs: Array<{ msg: string; fields: unknown }> = [];
let bridge: McpBridge | undefined;
let executor: ToolExecutor | undefined;
let servers: McpServerStore;
let tools: ToolStore;
const children: ChildProcess[] = [];
const stops: Array<() => Promise<void>> = [];
/** Every marker a stdio server of this file was started with, to find its processes. */
const markers: string[] = [];

const LIMITS = {
  restartMinMs: 40,
  restartMaxMs: 5_000,
  connectTimeoutMs: 10_000,
  callTimeoutMs: 20_000,
  pingIntervalMs: 200,
};

/** The bridge's environment: what records may pass on to servers, by name. */
const BRIDGE_ENV = { MCP_TEST_VALUE: "passed-through", MCP_TEST_TOKEN: "Bearer t0k-for-the-upstream" };

beforeAll(async () => {
  const { nc, names } = fx.env();
  executor = await startToolExecutor({ nc, names, tools: [], config: { approvalTimeoutMs: 1_500 } });
  bridge = await startMcpBridge({ nc, names, log: keptLogger(logs), limits: LIMITS, env: BRIDGE_ENV });
  servers = await McpServerStore.open({ nc, names });
  tools = await ToolStore.open({ nc, names });
});

afterAll(async () => {
  await bridge?.stop();
  await executor?.stop();
  for (const c of children) c.kill("SIGKILL");
  for (const stop of stops) await stop();
});

/** A stdio record that runs `node <bin> <args…>`, with a marker argument to find its process by. */
function stdio(name: string, bin: string, args: string[], over: Partial<McpServerRecord> = {}) {
  const marker = `--geode-test-${randomUUID()}`;
  markers.push(marker);
  const record: McpServerRecord = {
    name,
    transport: "stdio",
    command: process.execPath,
    args: [bin, ...args, ...(bin === FS_BIN ? [] : [marker])],
    created_at: Date.now(),
    updated_by: "test",
    ...over,
  };
  return { record, marker };
}

/** Pids of running processes whose command line holds `text`. */
function pidsWith(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      const state = readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.[0];
      if (cmdline.includes(text) && state !== "Z") pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const toolsOf = async (server: string): Promise<ToolDefinition[]> =>
  (await tools.list()).filter((t) => t.mcp?.server === server).sort((a, b) => (a.name < b.name ? -1 : 1));
const stateOf = (server: string) => bridge?.servers().find((s) => s.name === server);
const bridgeEvents = async (type: string, server: string): Promise<EventEnvelope[]> =>
  (await eventsOf(fx.env().jsm, fx.env().names.eventsStream)).filter(
    (e) => e.event === type && e.payload["server"] === server,
  );
/** The events once there are at least `count` of them. */
async function eventsUntil(type: string, server: string, count: number): Promise<EventEnvelope[]> {
  await waitFor(async () => (await bridgeEvents(type, server)).length >= count, 20_000);
  return bridgeEvents(type, server);
}

let callSeq = 0;
async function call(tool: string, args: Record<string, unknown>): Promise<ToolExecuteReply> {
  const client = createToolClient({ nc: fx.env().nc, names: fx.env().names });
  return client.execute({
    tool_name: tool,
    arguments: args,
    correlation: { session_id: "mcp-bridge-test", tool_call_id: `call-${++callSeq}` },
  });
}
const textOf = (result: unknown): string =>
  ((result as { content?: Array<{ text?: string }> }).content ?? []).map((c) => c.text ?? "").join("");

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

describe("server-filesystem over stdio", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "geode-mcp-fs-"));

  it("a record makes the bridge start it; its tools are registered with effects, approval and origin", async () => {
    await servers.put(
      stdio("fs", FS_BIN, [root], { effects: { "move_*": "admin" }, approve: ["create_*"] }).record,
    );
    await waitFor(() => stateOf("fs")?.state === "connected", 20_000);
    await waitFor(async () => (await toolsOf("fs")).length === 14);
    const defs = await toolsOf("fs");
    const byName = new Map(defs.map((d) => [d.name, d]));
    expect([...byName.keys()]).toEqual(
      expect.arrayContaining(["fs_read_text_file", "fs_write_file", "fs_list_allowed_directories"]),
    );
    expect(byName.get("fs_read_text_file")).toMatchObject({
      effect: "read",
      requires_approval: false,
      mcp: {
        server: "fs",
        tool: "read_text_file",
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
    });
    expect(byName.get("fs_write_file")).toMatchObject({
      effect: "mutation",
      requires_approval: false,
      mcp: {
        server: "fs",
        tool: "write_file",
        annotations: {
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: true,
          openWorldHint: false,
        },
      },
    });
    expect(byName.get("fs_move_file")?.effect).toBe("admin");
    expect(byName.get("fs_create_directory")).toMatchObject({ effect: "mutation", requires_approval: true });
    expect(byName.get("fs_write_file")?.input_schema).toMatchObject({
      type: "object",
      properties: { path: { type: "string" }, content: { type: "string" } },
    });
    expect(stateOf("fs")).toMatchObject({
      transport: "stdio",
      tools: 14,
      protocol_version: "2025-11-25",
      last_error: null,
      attempts: 0,
    });
    const [connected] = await eventsUntil("mcp_server_connected", "fs", 1);
    expect(connected?.payload).toEqual({
      server: "fs",
      transport: "stdio",
      protocol_version: "2025-11-25",
      tools: 14,
    });
    expect(connected?.source).toBe("mcp-bridge");
  });

  it("write_file through the tool-executor lands the file; read_text_file returns it", async () => {
    const file = path.join(root, "note.txt");
    const written = await call("fs_write_file", { path: file, content: "hello from the plane" });
    expect(written).toMatchObject({ status: "completed", has_error: false, executed: true });
    expect(readFileSync(file, "utf8")).toBe("hello from the plane");
    const read = await call("fs_read_text_file", { path: file });
    expect(read).toMatchObject({ status: "completed", has_error: false });
    expect(textOf(read.result)).toBe("hello from the plane");
    // The upstream's own refusal (a path outside its root) is an error result, not a failure.
    const outside = await call("fs_read_text_file", { path: "/etc/hostname" });
    expect(outside).toMatchObject({ status: "failed", has_error: true, executed: true });
    expect(textOf(outside.result)).toMatch(/outside allowed directories|Access denied/);
  });

  it("a tool the record says to approve does not run without a person's approval", async () => {
    const dir = path.join(root, "made");
    const reply = await call("fs_create_directory", { path: dir });
    expect(reply.status).not.toBe("completed");
    expect(reply.executed).toBe(false);
    expect(existsSync(dir)).toBe(false);
  });

  it("a killed child is restarted and its tools come back", async () => {
    const [pid] = pidsWith(root);
    expect(pid).toBeDefined();
    const before = (await bridgeEvents("mcp_server_connected", "fs")).length;
    process.kill(pid as number, "SIGKILL");
    const [failed] = await eventsUntil("mcp_server_failed", "fs", 1);
    expect(failed?.payload).toMatchObject({ server: "fs", attempt: 1, retry_in_ms: LIMITS.restartMinMs });
    await waitFor(
      async () => (await bridgeEvents("mcp_server_connected", "fs")).length === before + 1,
      20_000,
    );
    const again = pidsWith(root);
    expect(again).toHaveLength(1);
    expect(again[0]).not.toBe(pid);
    expect(await toolsOf("fs")).toHaveLength(14);
    const read = await call("fs_read_text_file", { path: path.join(root, "note.txt") });
    expect(textOf(read.result)).toBe("hello from the plane");
  });

  // Each step below is bounded by its own wait; on a loaded machine together they once ran past
  // the default 30 s (the stop's grace periods, KV deletes and the event's publish in a row).
  it("the record removed: its tools are gone and so is the child", { timeout: 60_000 }, async () => {
    expect(pidsWith(root)).toHaveLength(1);
    await servers.remove("fs");
    await waitFor(async () => (await toolsOf("fs")).length === 0);
    await waitFor(() => pidsWith(root).length === 0);
    expect(stateOf("fs")).toBeUndefined();
    await waitFor(async () =>
      (await bridgeEvents("mcp_server_failed", "fs")).some((e) => e.payload["retry_in_ms"] === null),
    );
    const failed = (await bridgeEvents("mcp_server_failed", "fs")).at(-1);
    expect(failed?.payload).toMatchObject({ error: "server removed" });
  });
});

describe("supervision", () => {
  it("a bad record is skipped and logged while good ones keep working", async () => {
    const kv = await ensureBucket(fx.env().nc, fx.env().names, "mcpServers");
    await kv.put("broken", JSON.stringify({ name: "broken", transport: "ftp", created_at: 1 }));
    await kv.put("worse", "not json at all");
    const startsFile = path.join(mkdtempSync(path.join(os.tmpdir(), "geode-mcp-starts-")), "starts");
    const { record } = stdio("good", CHANGING_BIN, ["--starts", startsFile]);
    await servers.put(record);
    await waitFor(() => stateOf("good")?.state === "connected", 20_000);
    expect(await toolsOf("good")).toHaveLength(4);
    // One process per connection: the command is not run a second time to probe its revision.
    expect(readFileSync(startsFile, "utf8").trim().split("\n")).toHaveLength(1);
    expect(stateOf("broken")).toBeUndefined();
    expect(stateOf("worse")).toBeUndefined();
    const skipped = logs.filter((l) => l.msg === "MCP server record is not valid; skipped");
    expect(skipped.map((l) => (l.fields as { server: string }).server).sort()).toEqual(["broken", "worse"]);
    const ran = await call("good_grow", {});
    expect(textOf(ran.result)).toBe("1 extra tools");
  });

  it("a tool name another provider registered is neither overwritten nor served", async () => {
    const { nc, names } = fx.env();
    const theirs: ToolDefinition = {
      name: "mine_grow",
      description: "a remote tool of another provider",
      input_schema: { type: "object" },
      effect: "read",
      requires_approval: false,
    };
    await tools.publish(theirs);
    const answered: string[] = [];
    const sub = nc.subscribe(names.toolTerminal("mine_grow"), {
      queue: "tool.mine_grow",
      callback: (_e, m) => {
        answered.push("theirs");
        m.respond(
          JSON.stringify({ result: { content: [{ type: "text", text: "theirs" }] }, has_error: false }),
        );
      },
    });
    await nc.flush();
    try {
      await servers.put(stdio("mine", CHANGING_BIN, []).record);
      await waitFor(() => stateOf("mine")?.state === "connected", 20_000);
      expect(await tools.get("mine_grow")).toEqual(theirs);
      expect((await toolsOf("mine")).map((t) => t.name)).toEqual(["mine_exit", "mine_refuse", "mine_shrink"]);
      expect(logs.some((l) => (l.fields as { tool?: string }).tool === "mine_grow")).toBe(true);
      for (let i = 0; i < 4; i++) expect(textOf((await call("mine_grow", {})).result)).toBe("theirs");
      expect(answered).toHaveLength(4);
      await servers.remove("mine");
      await waitFor(() => stateOf("mine") === undefined);
      expect(await tools.get("mine_grow")).toEqual(theirs);
    } finally {
      sub.unsubscribe();
      await tools.remove("mine_grow");
    }
  });

  it("notifications/tools/list_changed is followed: a tool added and removed upstream", async () => {
    await waitFor(async () => (await toolsOf("good")).some((t) => t.name === "good_extra_1"));
    const added = (await toolsOf("good")).find((t) => t.name === "good_extra_1");
    expect(added).toMatchObject({ effect: "read", mcp: { server: "good", tool: "extra_1" } });
    expect(textOf((await call("good_extra_1", {})).result)).toBe("ran extra_1");
    await call("good_shrink", {});
    await waitFor(async () => !(await toolsOf("good")).some((t) => t.name === "good_extra_1"));
    expect(stateOf("good")?.tools).toBe(4);
  });

  it("a server without prompts lists none and refuses a prompt, without asking it", async () => {
    const { nc, names } = fx.env();
    const forward = (method: string, params: Record<string, unknown>) =>
      requestJson<{ result: Record<string, unknown> }>(
        nc,
        names.mcpForward("good"),
        { method, params },
        { timeoutMs: 10_000 },
      );
    expect((await forward("prompts/list", {})).result).toEqual({ prompts: [] });
    await expect(forward("prompts/get", { name: "x" })).rejects.toThrow(/MCP server good has no prompts/);
  });

  it("resources/list through the forward follows the upstream's pages", async () => {
    const { nc, names } = fx.env();
    const reply = await requestJson<{ result: { resources: Array<{ uri: string }>; nextCursor?: string } }>(
      nc,
      names.mcpForward("good"),
      { method: "resources/list", params: {} },
      { timeoutMs: 10_000 },
    );
    expect(reply.result.resources.map((r) => r.uri)).toEqual([0, 1, 2, 3, 4].map((i) => `memo://note/${i}`));
    expect(reply.result.nextCursor).toBeUndefined();
    const page = await requestJson<{ result: { resources: unknown[]; nextCursor?: string } }>(
      nc,
      names.mcpForward("good"),
      { method: "resources/list", params: { cursor: "2" } },
      { timeoutMs: 10_000 },
    );
    expect(page.result).toMatchObject({ nextCursor: "4", resources: [{ uri: "memo://note/2" }, {}] });
  });

  it("a server whose command exits at once fails and is restarted with growing backoff", async () => {
    await servers.put({
      name: "dead",
      transport: "stdio",
      command: process.execPath,
      args: [
        "-e",
        "process.stderr.write('cannot start: no config, token=tk1234567890secret\\n'); process.exit(1)",
      ],
      created_at: Date.now(),
      updated_by: "test",
    });
    const failures = await eventsUntil("mcp_server_failed", "dead", 4);
    expect(failures.slice(0, 4).map((e) => [e.payload["attempt"], e.payload["retry_in_ms"]])).toEqual([
      [1, 40],
      [2, 80],
      [3, 160],
      [4, 320],
    ]);
    expect(String(failures[0]?.payload["error"])).toContain("cannot start: no config");
    expect(stateOf("dead")).toMatchObject({ tools: 0, last_error: expect.stringContaining("no config") });
    // The key it printed is kept nowhere: not in its state, its events or the log.
    expect(stateOf("dead")?.last_error).not.toContain("tk1234567890secret");
    expect(JSON.stringify(failures)).not.toContain("tk1234567890secret");
    expect(JSON.stringify(logs)).not.toContain("tk1234567890secret");
    expect(await toolsOf("dead")).toEqual([]);
    // The good server never noticed.
    expect(stateOf("good")?.state).toBe("connected");
    await servers.remove("dead");
    await waitFor(() => stateOf("dead") === undefined);
  });

  it("a record removed while its server is starting leaves no process behind", async () => {
    const race = stdio("race", "-e", ["setInterval(() => {}, 1000)", "--"]);
    for (let i = 0; i < 2; i++) {
      await servers.put(race.record);
      await servers.remove("race");
    }
    await waitFor(() => stateOf("race") === undefined);
    await eventsUntil("mcp_server_failed", "race", 1);
    await waitFor(() => pidsWith(race.marker).length === 0);
  });

  it("a server that crashes soon after each start backs off as one that never starts", async () => {
    await servers.put(stdio("flap", CHANGING_BIN, ["--exit-on-ping"]).record);
    const failures = await eventsUntil("mcp_server_failed", "flap", 3);
    expect(failures.slice(0, 3).map((e) => e.payload["retry_in_ms"])).toEqual([40, 80, 160]);
    // Each time it had connected (and was pinged), and each time its tools were taken away.
    expect((await bridgeEvents("mcp_server_connected", "flap")).length).toBeGreaterThanOrEqual(3);
    expect(failures.slice(0, 3).map((e) => e.payload["attempt"])).toEqual([1, 1, 1]);
    await servers.remove("flap");
    await waitFor(async () => stateOf("flap") === undefined && (await toolsOf("flap")).length === 0);
  });

  it("a crashed upstream is restarted and its tools come back", async () => {
    const before = (await bridgeEvents("mcp_server_connected", "good")).length;
    const exited = await call("good_exit", {});
    expect(textOf(exited.result)).toBe("bye");
    await waitFor(async () => (await bridgeEvents("mcp_server_connected", "good")).length > before, 20_000);
    await waitFor(async () => (await toolsOf("good")).length === 4);
    expect(textOf((await call("good_grow", {})).result)).toBe("1 extra tools");
  });
});

describe("server-everything", () => {
  it("stdio: tools, resources and prompts through the forward, echo through the executor", async () => {
    const { nc, names } = fx.env();
    await servers.put(
      stdio("every", EVERYTHING_BIN, ["stdio"], { env: ["MCP_TEST_VALUE", "MCP_UNSET"] }).record,
    );
    await waitFor(() => stateOf("every")?.state === "connected", 20_000);
    const defs = await toolsOf("every");
    expect(defs.map((d) => d.name)).toEqual(expect.arrayContaining(["every_echo", "every_get-sum"]));
    expect(defs.find((d) => d.name === "every_gzip-file-as-resource")?.effect).toBe("communication");
    expect(defs.find((d) => d.name === "every_toggle-simulated-logging")?.effect).toBe("mutation");
    const echoed = await call("every_echo", { message: "through the boundary" });
    expect(echoed).toMatchObject({ status: "completed", has_error: false });
    expect(textOf(echoed.result)).toBe("Echo: through the boundary");
    // The server's environment: the variables the record names, none of the bridge's others.
    const seen = JSON.parse(textOf((await call("every_get-env", {})).result)) as Record<string, string>;
    expect(seen["MCP_TEST_VALUE"]).toBe("passed-through");
    expect(seen).not.toHaveProperty("MCP_TEST_TOKEN");
    expect(seen).not.toHaveProperty("MCP_UNSET");
    expect(seen).not.toHaveProperty("NATS_URL");

    const forward = <T>(method: string, params: Record<string, unknown>) =>
      requestJson<{ result: T }>(
        nc,
        names.mcpForward("every"),
        { method, params },
        { timeoutMs: 10_000 },
      ).then((r) => r.result);
    const listed = await forward<{ resources: Array<{ uri: string }> }>("resources/list", {});
    expect(listed.resources.length).toBeGreaterThan(0);
    const uri = listed.resources[0]?.uri ?? "";
    const read = await forward<{ contents: Array<{ uri: string }> }>("resources/read", { uri });
    expect(read.contents[0]?.uri).toBe(uri);
    const templates = await forward<{ resourceTemplates: unknown[] }>("resources/templates/list", {});
    expect(templates.resourceTemplates.length).toBeGreaterThan(0);
    const prompts = await forward<{ prompts: Array<{ name: string }> }>("prompts/list", {});
    expect(prompts.prompts.map((p) => p.name)).toContain("simple-prompt");
    const prompt = await forward<{ messages: unknown[] }>("prompts/get", { name: "simple-prompt" });
    expect(prompt.messages.length).toBeGreaterThan(0);
    // An upstream error is a coded error reply, and the forward keeps serving.
    await expect(forward("resources/read", { uri: "nope://x" })).rejects.toThrow(/MCP server every/);
    await expect(forward("tools/list", {})).rejects.toThrow(/invalid_request|method/);
    expect((await forward<{ prompts: unknown[] }>("prompts/list", {})).prompts.length).toBe(
      prompts.prompts.length,
    );
  });

  it("end to end through POST /v1/mcp with the SDK's client, names prefixed with the server", async () => {
    const client = new Client(
      { name: "bridge-e2e", version: "1.0.0" },
      { versionNegotiation: { mode: "auto" } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${fx.gateway().url}/v1/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${fx.token()}` } },
      }),
    );
    try {
      await waitFor(async () => (await client.listTools()).tools.some((t) => t.name === "every_echo"));
      // A mutating tool: admitted with a receipt, run once upstream.
      const grown = await client.callTool({ name: "good_grow", arguments: {} });
      expect(grown.content).toEqual([{ type: "text", text: expect.stringMatching(/^\d+ extra tools$/) }]);
      const result = await client.callTool({ name: "every_echo", arguments: { message: "hi" } });
      expect(result.isError).toBeFalsy();
      expect(result.content).toEqual([{ type: "text", text: "Echo: hi" }]);
      // The upstream's own error result reaches the client as it came.
      const refused = await client.callTool({ name: "good_refuse", arguments: {} });
      expect(refused).toMatchObject({ isError: true, content: [{ type: "text", text: "refused upstream" }] });
      const resources = await client.listResources();
      const mine = resources.resources.filter((r) => r.uri.startsWith("every_"));
      expect(mine.length).toBeGreaterThan(0);
      const paged = resources.resources.filter((r) => r.uri.startsWith("good_"));
      expect(paged.map((r) => r.uri)).toEqual([0, 1, 2, 3, 4].map((i) => `good_memo://note/${i}`));
      const read = await client.readResource({ uri: mine[0]?.uri ?? "" });
      expect(read.contents.length).toBeGreaterThan(0);
      const prompts = await client.listPrompts();
      expect(prompts.prompts.map((p) => p.name)).toContain("every_simple-prompt");
      const prompt = await client.getPrompt({ name: "every_simple-prompt" });
      expect(prompt.messages.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it("streamable HTTP: connects with version negotiation and serves its tools", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [EVERYTHING_BIN, "streamableHttp"], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(child);
    await new Promise<void>((resolve, reject) => {
      child.stderr?.on("data", (d: Buffer) => {
        if (d.toString().includes("listening on port")) resolve();
      });
      child.once("exit", (code) => reject(new Error(`server-everything exited with ${code}`)));
    });
    // A recording proxy in front of it: which Authorization headers the bridge sent.
    const seenAuth = new Set<string>();
    const proxy = createHttpServer((req, res) => {
      seenAuth.add(String(req.headers["authorization"] ?? "none"));
      const upstream = httpRequest(
        { host: "127.0.0.1", port, path: req.url, method: req.method, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    stops.push(
      () =>
        new Promise<void>((resolve) => {
          proxy.closeAllConnections();
          proxy.close(() => resolve());
        }),
    );
    const proxyPort = (proxy.address() as { port: number }).port;
    await servers.put({
      name: "web",
      transport: "http",
      url: `http://127.0.0.1:${proxyPort}/mcp`,
      headers: { Authorization: "$MCP_TEST_TOKEN", "X-Missing": "$MCP_UNSET" },
      created_at: Date.now(),
      updated_by: "test",
    });
    await waitFor(() => stateOf("web")?.state === "connected", 20_000);
    expect([...seenAuth]).toEqual(["Bearer t0k-for-the-upstream"]);
    expect(logs.some((l) => (l.fields as { variable?: string }).variable === "MCP_UNSET")).toBe(true);
    expect(stateOf("web")).toMatchObject({ transport: "http", protocol_version: "2025-11-25" });
    const echoed = await call("web_echo", { message: "over http" });
    expect(textOf(echoed.result)).toBe("Echo: over http");
    // The server gone (no connection to see closing): the ping finds it failed, its tools removed.
    child.kill("SIGKILL");
    await waitFor(async () => (await bridgeEvents("mcp_server_failed", "web")).length > 0, 20_000);
    await waitFor(async () => (await toolsOf("web")).length === 0);
    await servers.remove("web");
  });
});

describe("a server of the stateless 2026-07-28 revision", () => {
  it("connects with it, and its liveness checks keep it connected", async () => {
    const child = spawn(process.execPath, [MODERN_BIN], { stdio: ["ignore", "pipe", "inherit"] });
    children.push(child);
    const methods: string[] = [];
    let buffered = "";
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout?.on("data", (d: Buffer) => {
        buffered += d.toString();
        const lines = buffered.split("\n");
        buffered = lines.pop() ?? "";
        for (const line of lines) {
          const listening = /^listening (\d+)$/.exec(line);
          if (listening) resolve(Number(listening[1]));
          else methods.push(line);
        }
      });
      child.once("exit", (code) => reject(new Error(`the server exited with ${code}`)));
    });
    await servers.put({
      name: "modern",
      transport: "http",
      url: `http://127.0.0.1:${port}/mcp`,
      created_at: Date.now(),
      updated_by: "test",
    });
    await waitFor(() => stateOf("modern")?.state === "connected", 20_000);
    expect(stateOf("modern")).toMatchObject({ protocol_version: "2026-07-28", tools: 1 });
    expect(textOf((await call("modern_hello", {})).result)).toBe("hello");
    // Three liveness checks after it connected, and it never failed.
    const checks = methods.filter((m) => m === "server/discover").length;
    await waitFor(() => methods.filter((m) => m === "server/discover").length >= checks + 3, 20_000);
    expect(stateOf("modern")?.state).toBe("connected");
    expect(await bridgeEvents("mcp_server_failed", "modern")).toEqual([]);
    await servers.remove("modern");
    await waitFor(() => stateOf("modern") === undefined);
    child.kill("SIGTERM");
  });
});

describe("stop", () => {
  it("leaves no child, no tool and no subscription behind", async () => {
    const { nc, names } = fx.env();
    expect(pidsWith(markers.at(-1) ?? "").length).toBeGreaterThan(0);
    await bridge?.stop();
    bridge = undefined;
    for (const m of markers) expect(pidsWith(m), m).toEqual([]);
    expect((await tools.list()).filter((t) => t.mcp)).toEqual([]);
    await expect(
      requestJson(nc, names.mcpForward("every"), { method: "prompts/list", params: {} }, { timeoutMs: 500 }),
    ).rejects.toThrow();
    await expect(requestJson(nc, names.toolTerminal("every_echo"), {}, { timeoutMs: 500 })).rejects.toThrow();
    const stopped = await bridgeEvents("mcp_server_failed", "every");
    expect(stopped.at(-1)?.payload).toMatchObject({ error: "mcp-bridge stopped", retry_in_ms: null });
  });

  it("a bridge starting removes the tools a killed one left: of removed servers and of gone tools", async () => {
    const { nc, names } = fx.env();
    const stale = (server: string, tool: string): ToolDefinition => ({
      name: `${server}_${tool}`,
      description: "left by a killed bridge",
      input_schema: { type: "object" },
      effect: "read",
      requires_approval: false,
      mcp: { server, tool, annotations: {} },
    });
    await tools.publish(stale("gone", "tool"));
    await tools.publish(stale("good", "vanished"));
    await tools.publish({ ...stale("plain", "tool"), name: "plain.tool", mcp: undefined });
    const again = await startMcpBridge({ nc, names, log: keptLogger(logs), limits: LIMITS, env: {} });
    try {
      expect(await tools.get("gone_tool")).toBeNull();
      await waitFor(() => again.servers().find((s) => s.name === "good")?.state === "connected", 20_000);
      expect((await toolsOf("good")).map((t) => t.name)).toEqual([
        "good_exit",
        "good_grow",
        "good_refuse",
        "good_shrink",
      ]);
      expect(await tools.get("plain.tool")).not.toBeNull();
    } finally {
      await again.stop();
    }
    for (const m of markers) expect(pidsWith(m), m).toEqual([]);
  });
  it("a server that never answers is given up after the connect timeout and its process killed; a missing command fails clearly", async () => {
    const { nc, names } = fx.env();
    const quick = await startMcpBridge({
      nc,
      names,
      log: keptLogger(logs),
      limits: { ...LIMITS, connectTimeoutMs: 300 },
      env: {},
    });
    try {
      const mute = stdio("mute", "-e", ["setInterval(() => {}, 1000)", "--"]);
      await servers.put(mute.record);
      let first = 0;
      await waitFor(() => {
        first = pidsWith(mute.marker)[0] ?? 0;
        return first > 0;
      });
      await eventsUntil("mcp_server_failed", "mute", 2);
      expect(processAlive(first)).toBe(false);
      const [failed] = await bridgeEvents("mcp_server_failed", "mute");
      expect(String(failed?.payload["error"])).toMatch(/time/i);

      await servers.put({
        name: "missing",
        transport: "stdio",
        command: "/nonexistent/mcp-server",
        created_at: Date.now(),
        updated_by: "test",
      });
      const [gone] = await eventsUntil("mcp_server_failed", "missing", 1);
      expect(String(gone?.payload["error"])).toContain("ENOENT");
      await servers.remove("mute");
      await servers.remove("missing");
      await waitFor(() => !quick.servers().some((x) => x.name === "mute" || x.name === "missing"));
    } finally {
      await quick.stop();
    }
    for (const m of markers) expect(pidsWith(m), m).toEqual([]);
  });
});
