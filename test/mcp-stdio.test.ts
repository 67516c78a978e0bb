/**
 * `geode mcp stdio` (DESIGN section 19) as a stdio-only MCP client starts it: the compiled
 * `geode` spawned by the SDK's `StdioClientTransport`, forwarding to a real agent gateway's
 * `POST /v1/mcp`, every call through the real tool-executor and dispatcher. The MCP-origin tools
 * and the bridge's forward are served here (the mcp-bridge's job), as in gateway-mcp.test.ts.
 */
import { execFile } from "node:child_process";
import { ensureBucket } from "@geode/bus";
import { HookName, type ToolDefinition } from "@geode/contracts";
import { serveTool } from "@geode/sdk";
import { GEODE_BIN } from "@geode/testing";
import { startToolExecutor, type ToolExecutor } from "@geode/tool-executor";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGatewayFixture } from "./gateway-support.js";
import { eventsOf } from "./verify-support.js";

const fx = useGatewayFixture();
let executor: ToolExecutor | undefined;
const ran: string[] = [];
const stops: Array<() => Promise<void> | void> = [];

function mcpTool(tool: string, effect: ToolDefinition["effect"], readOnly: boolean): ToolDefinition {
  return {
    name: `docs_${tool}`,
    description: `${tool} of docs`,
    input_schema: { type: "object", properties: { text: { type: "string" } } },
    effect,
    requires_approval: false,
    mcp: { server: "docs", tool, annotations: { readOnlyHint: readOnly } },
  };
}

beforeAll(async () => {
  const { nc, names } = fx.env();
  executor = await startToolExecutor({ nc, names, tools: [] });
  const servers = await ensureBucket(nc, names, "mcpServers");
  await servers.put(
    "docs",
    JSON.stringify({
      name: "docs",
      transport: "stdio",
      command: "true",
      created_at: Date.now(),
      updated_by: "test",
    }),
  );
  for (const def of [mcpTool("echo", "read", true), mcpTool("write", "mutation", false)]) {
    const served = await serveTool({ nc, names }, def, (args) => {
      ran.push(def.name);
      return { result: { content: [{ type: "text", text: `${def.mcp?.tool}: ${String(args["text"])}` }] } };
    });
    stops.push(() => served.close());
  }
  // The bridge's forward for `docs`: one resource, and a refusal of anything else.
  const sub = nc.subscribe(names.mcpForward("docs"));
  void (async () => {
    for await (const m of sub) {
      const req = m.json<{ method: string; params: Record<string, unknown> }>();
      if (req.method === "resources/list")
        m.respond(JSON.stringify({ result: { resources: [{ uri: "file:///a.md", name: "a" }] } }));
      else if (req.method === "resources/read")
        m.respond(JSON.stringify({ result: { contents: [{ uri: req.params["uri"], text: "hello" }] } }));
      else m.respond(JSON.stringify({ error: { code: "invalid_request", message: "no" } }));
    }
  })();
  stops.push(() => sub.unsubscribe());
});

afterAll(async () => {
  for (const s of stops.reverse()) await s();
  await executor?.stop();
});

/** The environment an MCP client's configuration gives `geode mcp stdio`. */
const stdioEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
  ...(process.env as Record<string, string>),
  ...fx.env().env,
  GEODE_GATEWAY_URL: fx.gateway().url,
  GEODE_AGENT_TOKEN: fx.token(),
  ...extra,
});

/** A stdio client that starts `geode mcp stdio`; its stderr is kept (stdout is the protocol). */
async function stdioClient(
  options: { mode?: "auto" | "legacy"; env?: Record<string, string>; args?: string[] } = {},
): Promise<{ client: Client; stderr: () => string; errors: Error[] }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [GEODE_BIN, "mcp", "stdio", ...(options.args ?? [])],
    env: options.env ?? stdioEnv(),
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
  const client = new Client(
    { name: "stdio-only-ide", version: "3.1.0" },
    { versionNegotiation: { mode: options.mode ?? "legacy" } },
  );
  // Anything on stdout that is not a protocol message would surface here.
  const errors: Error[] = [];
  client.onerror = (err) => errors.push(err);
  await client.connect(transport);
  stops.push(() => client.close());
  return { client, stderr: () => stderr, errors };
}

const names = (tools: Array<{ name: string }>) => tools.map((t) => t.name).sort();

describe("geode mcp stdio", () => {
  it("tools/list shows the gateway's tools, with their annotations, in both version modes", async () => {
    for (const mode of ["legacy", "auto"] as const) {
      const { client, errors } = await stdioClient({ mode });
      const { tools } = await client.listTools();
      expect(names(tools)).toEqual(["docs_echo", "docs_write"]);
      expect(tools.find((t) => t.name === "docs_echo")?.annotations?.readOnlyHint).toBe(true);
      expect(errors).toEqual([]);
    }
  });

  it("tools/call returns the upstream's result through the tool boundary", async () => {
    const { client, stderr } = await stdioClient({ args: ["--url", fx.gateway().url] });
    const before = ran.length;
    const result = await client.callTool({ name: "docs_echo", arguments: { text: "hi" } });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: "text", text: "echo: hi" }]);
    expect(ran.length).toBe(before + 1);
    expect(stderr()).toContain("forwarding to");
    // The gateway's session is the IDE's (agent, client name), not the proxy's.
    const events = await eventsOf(fx.env().jsm, fx.env().names.eventsStream);
    expect(events.some((e) => e.correlation.session_id.startsWith("mcp-laptop-stdio-only-ide-"))).toBe(true);
  });

  it("a call a PreToolUse handler blocks comes back as an isError result; the terminal never ran", async () => {
    await fx.serve(HookName.PreToolUse, "no-write", (e) =>
      (e.payload as { tool_name?: string }).tool_name === "docs_write"
        ? { action: "block", reason: "no writes from the IDE" }
        : null,
    );
    const { client } = await stdioClient();
    const before = ran.filter((n) => n === "docs_write").length;
    const result = await client.callTool({ name: "docs_write", arguments: { text: "x" } });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain("no writes from the IDE");
    expect(ran.filter((n) => n === "docs_write").length).toBe(before);
  });

  it("resources are forwarded, and the gateway's protocol errors pass through", async () => {
    const { client } = await stdioClient();
    const { resources } = await client.listResources();
    expect(resources).toEqual([{ uri: "docs_file:///a.md", name: "a" }]);
    const read = await client.readResource({ uri: "docs_file:///a.md" });
    expect(read.contents).toEqual([{ uri: "file:///a.md", text: "hello" }]);
    expect((await client.listPrompts()).prompts).toEqual([]);
    await expect(client.getPrompt({ name: "nope_greeting" })).rejects.toThrow(
      /no MCP server for name nope_greeting/,
    );
  });

  it("a token the gateway refuses is a protocol error naming the gateway, said on stderr too", async () => {
    const { client, stderr } = await stdioClient({
      env: stdioEnv({ GEODE_AGENT_TOKEN: "geode_agent_wrong" }),
    });
    await expect(client.listTools()).rejects.toThrow(
      /agent gateway http:\/\/127\.0\.0\.1:\d+: .*401.*does not know the token in GEODE_AGENT_TOKEN/,
    );
    expect(stderr()).toContain("tools/list");
    expect(stderr()).not.toContain("geode_agent_wrong");
  });

  it("without GEODE_AGENT_TOKEN it says so on stderr, writes nothing on stdout and exits 1", async () => {
    const env = stdioEnv();
    delete env["GEODE_AGENT_TOKEN"];
    const r = await new Promise<{ code: number; out: string; err: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [GEODE_BIN, "mcp", "stdio"],
        { env },
        (error, stdout, stderr) =>
          resolve({ code: error ? Number(error.code ?? 1) : 0, out: stdout, err: stderr }),
      );
      child.stdin?.end();
    });
    expect(r.code).toBe(1);
    expect(r.out).toBe("");
    expect(r.err).toContain("GEODE_AGENT_TOKEN is not set");
  });
});
