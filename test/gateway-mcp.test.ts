/**
 * `POST /v1/mcp` (DESIGN section 19) with the SDKs' own clients: MCP-origin tools registered in
 * `{ns}_tools` here (the mcp-bridge's job), their terminals and the bridge's forward served by the
 * test, and every call through the real tool-executor and dispatcher.
 */
import { randomUUID } from "node:crypto";
import { ensureBucket } from "@geode/bus";
import {
  type AgentRecord,
  HookName,
  type McpServerRecord,
  sha256,
  type ToolDefinition,
} from "@geode/contracts";
import { serveTool } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { startToolExecutor, type ToolExecutor } from "@geode/tool-executor";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as V1Transport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGatewayFixture } from "./gateway-support.js";
import { timelineOf } from "./verify-support.js";

const fx = useGatewayFixture();
let executor: ToolExecutor | undefined;
const ran: string[] = [];
const stops: Array<() => Promise<void> | void> = [];

function mcpTool(
  server: string,
  tool: string,
  effect: ToolDefinition["effect"],
  readOnly: boolean,
): ToolDefinition {
  return {
    name: `${server}_${tool}`,
    description: `${tool} of ${server}`,
    input_schema: { type: "object", properties: { text: { type: "string" } } },
    effect,
    requires_approval: false,
    mcp: { server, tool, annotations: { readOnlyHint: readOnly } },
  };
}

async function putServer(record: Partial<McpServerRecord> & { name: string }): Promise<void> {
  const kv = await ensureBucket(fx.env().nc, fx.env().names, "mcpServers");
  await kv.put(
    record.name,
    JSON.stringify({
      transport: "stdio",
      command: "true",
      created_at: Date.now(),
      updated_by: "test",
      ...record,
    }),
  );
}

beforeAll(async () => {
  const { nc, names } = fx.env();
  executor = await startToolExecutor({ nc, names, tools: [] });
  await putServer({ name: "docs" });
  await putServer({ name: "ops", groups: ["admins"] });
  const conn = { nc, names };
  for (const [def, handler] of [
    [mcpTool("docs", "echo", "read", true), (a: Record<string, unknown>) => a],
    [mcpTool("docs", "write", "mutation", false), (a: Record<string, unknown>) => a],
    [mcpTool("ops", "reboot", "mutation", false), (a: Record<string, unknown>) => a],
  ] as const) {
    const served = await serveTool(conn, def, (args) => {
      ran.push(def.name);
      return {
        result: { content: [{ type: "text", text: `${def.mcp?.tool}: ${String(handler(args)["text"])}` }] },
      };
    });
    stops.push(() => served.close());
  }
  // The bridge's forward for `docs`, unprefixed names in and out.
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
  for (const s of stops) await s();
  await executor?.stop();
});

const url = () => new URL(`${fx.gateway().url}/v1/mcp`);
const auth = (token = fx.token()) => ({ headers: { authorization: `Bearer ${token}` } });

async function v2(mode: "auto" | "legacy", token?: string): Promise<Client> {
  const client = new Client({ name: `test-${mode}`, version: "1.0.0" }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(url(), { requestInit: auth(token) }));
  stops.push(() => client.close());
  return client;
}

const names = (tools: Array<{ name: string }>) => tools.map((t) => t.name).sort();

describe("tools", () => {
  it("tools/list shows the MCP tools the agent's groups may see, in both version modes", async () => {
    for (const mode of ["auto", "legacy"] as const) {
      const { tools } = await (await v2(mode)).listTools();
      expect(names(tools)).toEqual(["docs_echo", "docs_write"]);
      expect(tools.find((t) => t.name === "docs_echo")?.annotations?.readOnlyHint).toBe(true);
    }
    // An agent in the group sees the ops server too.
    const token = `geode_${randomUUID()}`;
    const kv = await ensureBucket(fx.env().nc, fx.env().names, "agents");
    const record: AgentRecord = {
      name: "admin",
      token_sha256: sha256(token),
      created_at: Date.now(),
      groups: ["admins"],
    };
    await kv.put("admin", JSON.stringify(record));
    await waitFor(() => fx.gateway().agents() === 2);
    const { tools } = await (await v2("auto", token)).listTools();
    expect(names(tools)).toEqual(["docs_echo", "docs_write", "ops_reboot"]);
  });

  it("a call completes through the executor and returns the upstream result", async () => {
    const result = await (await v2("auto")).callTool({ name: "docs_echo", arguments: { text: "hi" } });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: "text", text: "echo: hi" }]);
  });

  it("PostToolUse add_context reasons come after the upstream's content as text items", async () => {
    await fx.serve(HookName.PostToolUse, "note", (e) =>
      (e.payload as { tool_name?: string }).tool_name === "docs_echo"
        ? { action: "add_context", reason: "checked by the plane" }
        : null,
    );
    const result = await (await v2("auto")).callTool({ name: "docs_echo", arguments: { text: "ctx" } });
    expect(result.content).toEqual([
      { type: "text", text: "echo: ctx" },
      { type: "text", text: expect.stringContaining("checked by the plane") },
    ]);
  });

  it("the v1 SDK client calls through the legacy revisions", async () => {
    const client = new V1Client({ name: "v1", version: "1.0.0" });
    await client.connect(new V1Transport(url(), { requestInit: auth() }));
    stops.push(() => client.close());
    const result = await client.callTool({ name: "docs_echo", arguments: { text: "v1" } });
    expect(result.content).toEqual([{ type: "text", text: "echo: v1" }]);
  });

  it("a call a PreToolUse handler blocks is an isError result and the terminal never ran", async () => {
    await fx.serve(HookName.PreToolUse, "no-write", (e) =>
      (e.payload as { tool_name?: string }).tool_name === "docs_write"
        ? { action: "block", reason: "no writes" }
        : null,
    );
    const before = ran.filter((n) => n === "docs_write").length;
    const result = await (await v2("legacy")).callTool({ name: "docs_write", arguments: { text: "x" } });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain("no writes");
    expect(ran.filter((n) => n === "docs_write").length).toBe(before);
  });

  it("an unknown tool, or one of a server the agent may not see, is an isError result", async () => {
    const client = await v2("auto");
    for (const name of ["nope_nope", "ops_reboot"]) {
      const result = await client.callTool({ name, arguments: {} });
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toContain("unknown tool");
    }
    expect(ran).not.toContain("ops_reboot");
  });

  it("a mutating call is admitted with a receipt and runs once", async () => {
    const before = ran.filter((n) => n === "docs_write").length;
    const result = await (await v2("auto")).callTool({ name: "docs_write", arguments: { text: "once" } });
    expect(result.content).toEqual([{ type: "text", text: "write: once" }]);
    expect(ran.filter((n) => n === "docs_write").length).toBe(before + 1);
  });
});

describe("HTTP", () => {
  const post = (init: RequestInit & { headers?: Record<string, string> }, path = "/v1/mcp") =>
    fetch(`${fx.gateway().url}${path}`, {
      method: "POST",
      ...init,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...init.headers,
      },
    });
  const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });

  it("no token is 401 with WWW-Authenticate: Bearer", async () => {
    const res = await post({ body: list });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  it("OAuth probes are 404 at once; GET is 405", async () => {
    for (const path of [
      "/.well-known/oauth-protected-resource/v1/mcp",
      "/.well-known/oauth-authorization-server",
      "/.well-known/openid-configuration",
    ])
      expect((await fetch(`${fx.gateway().url}${path}`)).status).toBe(404);
    expect((await post({ body: "{}" }, "/register")).status).toBe(404);
    expect((await fetch(url(), auth())).status).toBe(405);
  });

  it("a foreign Host or Origin is refused", async () => {
    const res = await post({ body: list, headers: { ...auth().headers, origin: "https://evil.example" } });
    expect(res.status).toBe(403);
    const { request } = await import("node:http");
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        url(),
        { method: "POST", headers: { host: "evil.example", ...auth().headers } },
        (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end(list);
    });
    expect(status).toBe(403);
  });

  it("Mcp-Method disagreeing with the body is -32020; an unknown method is -32601", async () => {
    const client = await v2("auto");
    expect(client).toBeDefined();
    const meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
      "io.modelcontextprotocol/clientCapabilities": {},
    };
    const mismatch = await post({
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: { _meta: meta } }),
      headers: { ...auth().headers, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call" },
    });
    expect(await mismatch.text()).toContain("-32020");
    const unknown = await post({
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "nope/nope", params: {} }),
      headers: auth().headers,
    });
    expect(await unknown.text()).toContain("-32601");
  });

  it("a 10 MiB argument is a clear error and the gateway keeps serving", async () => {
    const client = await v2("legacy");
    await expect(
      client.callTool({ name: "docs_echo", arguments: { text: "x".repeat(10 * 1024 * 1024) } }),
    ).rejects.toThrow(/over \d+ bytes|413/);
    const result = await (await v2("legacy")).callTool({ name: "docs_echo", arguments: { text: "after" } });
    expect(result.content).toEqual([{ type: "text", text: "echo: after" }]);
  });
});

describe("resources", () => {
  it("resources/list and read go to the bridge with the server prefix, recorded as mcp.read", async () => {
    const client = await v2("auto");
    const { resources } = await client.listResources();
    expect(resources).toEqual([{ uri: "docs_file:///a.md", name: "a" }]);
    const read = await client.readResource({ uri: "docs_file:///a.md" });
    expect(read.contents).toEqual([{ uri: "file:///a.md", text: "hello" }]);
    await waitFor(async () => {
      const records = (await timelineOf(fx.env().jsm, fx.env().names.timelineStream)).filter(
        (r) => r.kind === "mcp.read",
      );
      return records.some(
        (r) => r.payload["method"] === "resources/read" && r.payload["uri_or_name"] === "docs_file:///a.md",
      );
    });
  });

  it("a read the upstream refuses or of no server is -32602 with why; a server not there is -32603", async () => {
    const client = await v2("legacy");
    await expect(client.getPrompt({ name: "docs_missing" })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining("no"),
    });
    await expect(client.readResource({ uri: "nosuch_file:///a" })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining("no MCP server for uri nosuch_file:///a"),
    });
    await expect(client.getPrompt({ name: "ops_restart" })).rejects.toMatchObject({ code: -32602 });
    await putServer({ name: "idle" });
    await waitFor(async () => {
      const err = await client.readResource({ uri: "idle_x" }).catch((e: unknown) => e);
      return (err as { code?: number }).code === -32603;
    });
    await expect(client.readResource({ uri: "idle_x" })).rejects.toMatchObject({
      code: -32603,
      message: expect.stringContaining("MCP server idle is not available"),
    });
  });
});
