/**
 * `GET /api/mcp/servers` against real NATS and Postgres: records in KV `{ns}_mcp_servers`, MCP
 * tools registered in `{ns}_tools` with their terminals served here, calls through the real
 * tool-executor so the projection counts them, and the mcp-bridge's health reply stood in for by a
 * NATS subscription answering a valid reply. Then the same calls in the session story: each named
 * by its server and tool, with its target, verdict and who decided.
 */
import { ensureBucket } from "@geode/bus";
import {
  ConsoleMcpServersSchema,
  ConsoleSessionStorySchema,
  type McpServerState,
  type ToolDefinition,
} from "@geode/contracts";
import { serveHook, serveTool } from "@geode/sdk";
import { useFixture, waitFor } from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";
import { startConsolePlane } from "./console-support.js";

const { fixture: plane } = useFixture(startConsolePlane, (p) => p.stop());
const stops: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const s of stops) await s();
});

function mcpTool(server: string, tool: string, readOnly: boolean, requiresApproval = false): ToolDefinition {
  return {
    name: `${server}_${tool}`,
    description: `${tool} of ${server}`,
    input_schema: { type: "object", properties: { text: { type: "string" }, path: { type: "string" } } },
    effect: readOnly ? "read" : "mutation",
    requires_approval: requiresApproval,
    mcp: { server, tool, annotations: { readOnlyHint: readOnly, destructiveHint: !readOnly } },
  };
}

async function putServer(record: Record<string, unknown> & { name: string }): Promise<void> {
  const kv = await ensureBucket(plane().env.nc, plane().env.names, "mcpServers");
  await kv.put(record.name, JSON.stringify({ created_at: Date.now(), updated_by: "test", ...record }));
}

/** Answers the mcp-bridge's health subject with `servers` (a real subscription on real NATS). */
function serveBridgeHealth(servers: McpServerState[]): () => void {
  const { nc, names } = plane().env;
  const sub = nc.subscribe(names.health("mcp-bridge"), {
    callback: (_e, m) => {
      m.respond(
        JSON.stringify({
          service: "mcp-bridge",
          status: "ok",
          version: "0.0.0",
          started_at: Date.now(),
          servers,
        }),
      );
    },
  });
  return () => sub.unsubscribe();
}

const get = async () => {
  const r = await plane().api("/api/mcp/servers");
  expect(r.status).toBe(200);
  return ConsoleMcpServersSchema.parse(r.body);
};

describe("GET /api/mcp/servers", () => {
  it("lists records with unknown state when no bridge answers, and never a header or env value", async () => {
    await putServer({
      name: "docs",
      transport: "stdio",
      command: "npx",
      args: ["srv", "a b"],
      env: ["DOCS_KEY"],
    });
    await putServer({
      name: "gh",
      transport: "http",
      url: "https://mcp.example.test/mcp",
      headers: { Authorization: "$GH_TOKEN_SECRETNAME" },
      groups: ["admins"],
      tools: ["issue_*"],
    });
    const started = Date.now();
    const body = await get();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(body.bridge).toBe(false);
    expect(body.items.map((s) => [s.name, s.transport, s.target, s.state])).toEqual([
      ["docs", "stdio", 'npx srv "a b"', "unknown"],
      ["gh", "http", "https://mcp.example.test/mcp", "unknown"],
    ]);
    expect(body.items[1]).toMatchObject({ groups: ["admins"], allow: ["issue_*"], tools_count: null });
    const raw = JSON.stringify((await plane().api("/api/mcp/servers")).body);
    expect(raw).not.toContain("GH_TOKEN_SECRETNAME");
    expect(raw).not.toContain("Authorization");
    expect(raw).not.toContain("DOCS_KEY");
  });

  it("shows the bridge's state and each tool's calls and blocks from the projection", async () => {
    const { nc, names } = plane().env;
    const conn = { nc, names };
    for (const def of [mcpTool("docs", "echo", true), mcpTool("docs", "wipe", false)]) {
      const served = await serveTool(conn, def, (args) => ({
        result: { content: [{ type: "text", text: String(args["text"]) }] },
      }));
      stops.push(() => served.close());
    }
    const guard = await serveHook(conn, "PreToolUse", { name: "mcpguard", priority: 5 }, (e) =>
      (e.payload as { tool_name?: string }).tool_name === "docs_wipe"
        ? { action: "block", reason: "no wiping" }
        : null,
    );
    stops.push(() => guard.close());
    stops.push(
      serveBridgeHealth([
        {
          name: "docs",
          transport: "stdio",
          state: "connected",
          tools: 2,
          protocol_version: "2025-11-25",
          last_error: null,
          attempts: 0,
          since: Date.now(),
        },
        {
          name: "gh",
          transport: "http",
          state: "failed",
          tools: 0,
          protocol_version: null,
          last_error: "401 from https://mcp.example.test/mcp",
          attempts: 3,
          since: Date.now(),
        },
      ]),
    );
    await waitFor(async () => (await get()).items[0]?.tools.length === 2);
    const corr = (n: number) => ({ session_id: "mcp-s1", turn_id: `t${n}`, tool_call_id: `c${n}` });
    await plane().callTool("docs_echo", { text: "a" }, corr(1));
    await plane().callTool("docs_echo", { text: "b" }, corr(2));
    await plane().callTool("docs_wipe", { text: "c" }, corr(3));
    await waitFor(async () => {
      const t = (await get()).items[0]?.tools ?? [];
      return t[0]?.calls === 2 && t[1]?.calls === 1 && t[1]?.blocks === 1;
    }, 30_000);
    const body = await get();
    expect(body.bridge).toBe(true);
    expect(body.window_ms).toBe(24 * 60 * 60_000);
    const [docs, gh] = body.items;
    expect(docs).toMatchObject({ state: "connected", tools_count: 2, last_error: null });
    expect(gh).toMatchObject({
      state: "failed",
      tools_count: 0,
      last_error: "401 from https://mcp.example.test/mcp",
    });
    expect(docs?.tools).toEqual([
      expect.objectContaining({
        name: "docs_echo",
        tool: "echo",
        effect: "read",
        read_only: true,
        destructive: false,
        calls: 2,
        blocks: 0,
      }),
      expect.objectContaining({
        name: "docs_wipe",
        tool: "wipe",
        effect: "mutation",
        read_only: false,
        destructive: true,
        calls: 1,
        blocks: 1,
      }),
    ]);
  });

  it("answers 401 without the token", async () => {
    expect((await plane().api("/api/mcp/servers", { token: null })).status).toBe(401);
  });
});

describe("MCP calls in the session story", () => {
  it("names each call server · tool, with what it acted on, its verdict and who decided", async () => {
    const { nc, names } = plane().env;
    const write = mcpTool("fs", "write_file", false, true);
    const served = await serveTool({ nc, names }, write, (args) => ({
      result: { content: [{ type: "text", text: `wrote ${String(args["path"])}` }] },
    }));
    stops.push(() => served.close());
    const corr = { session_id: "mcp-story", turn_id: "t1", tool_call_id: "w1" };
    // It needs a person: the console (an approver) lists it, and an operator allows it.
    const call = plane().callTool("fs_write_file", { path: "/srv/notes.txt", text: "hello" }, corr);
    let approvalId = "";
    await waitFor(async () => {
      const r = await plane().api("/api/approvals");
      approvalId =
        r.body.items.find((a: { tool_name: string }) => a.tool_name === "fs_write_file")?.approval_id ?? "";
      return approvalId !== "";
    }, 20_000);
    const answer = await plane().api("/api/approvals/answer", {
      body: { approval_id: approvalId, decision: "allow", operator: "ana" },
    });
    expect(answer.status).toBe(200);
    expect((await call).status).toBe("completed");
    const story = async (id: string) => {
      const r = await plane().api(`/api/sessions/${id}/story`);
      return r.status === 200 ? ConsoleSessionStorySchema.parse(r.body) : null;
    };
    await waitFor(async () => (await story("mcp-story"))?.steps[0]?.outcome === "completed", 30_000);
    const [written] = (await story("mcp-story"))!.steps;
    expect(written).toMatchObject({
      kind: "tool_call",
      tool_name: "fs_write_file",
      tool_kind: "mcp",
      mcp: { server: "fs", tool: "write_file" },
      target: "/srv/notes.txt",
      verdict: "approved",
      decided_by: "ana",
      outcome: "completed",
    });
    // The earlier session: the guard's block of docs_wipe names its server and tool too.
    const earlier = (await story("mcp-s1"))!.steps;
    expect(earlier.map((s) => [s.mcp?.server, s.mcp?.tool, s.verdict, s.decided_by])).toEqual([
      ["docs", "echo", "allowed", null],
      ["docs", "echo", "allowed", null],
      ["docs", "wipe", "blocked", "mcpguard"],
    ]);
    expect(earlier[2]).toMatchObject({ tool_kind: "mcp", reason: "mcpguard: no wiping", outcome: "not run" });
  });
});
