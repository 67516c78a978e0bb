import { randomUUID } from "node:crypto";
import { type Logger, requestJson } from "@geode/bus";
import {
  type Correlation,
  isResultRef,
  MCP_SERVER_NAME_PATTERN,
  type McpForwardedMethod,
  type McpServerRecord,
  type ToolDefinition,
  ToolExecuteLeg,
  type ToolExecuteReply,
} from "@geode/contracts";
import { McpServerStore, ResultStore, ToolStore } from "@geode/state";
import { createMcpHandler, type McpHttpHandler, Server } from "@modelcontextprotocol/server";
import { correlationOf } from "../agent-adapter.js";
import type { SessionTracker } from "../agent-plane/session-tracker.js";
import type { Plane } from "../plane.js";

/** What the endpoint needs of the gateway. */
export interface McpEndpointDeps {
  plane: Plane;
  sessions: SessionTracker;
  log: Logger;
  /** The groups of an agent (KV `{ns}_agents`); undefined when it has none. */
  groupsOf(agent: string): readonly string[] | undefined;
  /** A session ends after this long without a call. */
  sessionIdleMs: number;
  /** Terminal limit of a tool without its own `timeout_ms`. */
  toolTimeoutMs: number;
  hookTimeoutMs: number;
}

interface Client {
  name: string;
  version: string;
}

interface McpSession {
  session_id: string;
  last: number;
}

type CallToolResult = { content: Record<string, unknown>[]; isError?: boolean; [k: string]: unknown };

const errorResult = (text: string): CallToolResult => ({ isError: true, content: [{ type: "text", text }] });

/** The part of a client name that may go into a session id. */
const slug = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 40) || "client";

/**
 * `POST /v1/mcp` (DESIGN section 19): the plane as one MCP server in front of the upstream
 * servers the mcp-bridge registers. A fresh low-level SDK `Server` per request serves the
 * 2026-07-28 stateless revision and the 2025 revisions without sessions; each `tools/call` goes
 * through the tool-executor (every stage of section 5), resources and prompts go to the bridge.
 */
export class McpEndpoint {
  private readonly tools = new Map<string, ToolDefinition & { mcp: NonNullable<ToolDefinition["mcp"]> }>();
  private readonly servers = new Map<string, McpServerRecord>();
  private readonly sessions = new Map<string, McpSession>();
  /** The client each agent last named in `initialize` (2025 requests carry no clientInfo after it). */
  private readonly clients = new Map<string, Client>();
  private readonly handler: McpHttpHandler;
  private readonly results: ResultStore;
  private stops: Array<() => void> = [];

  private constructor(private readonly deps: McpEndpointDeps) {
    const conn = { nc: deps.plane.nc, names: deps.plane.names };
    this.results = new ResultStore(conn);
    this.handler = createMcpHandler((ctx) => this.server(ctx.authInfo?.clientId ?? ""), {
      legacy: "stateless",
      onerror: (err) => deps.log.debug({ err_type: err.name, message: err.message }, "mcp request refused"),
    });
  }

  /** Loads and follows the tools and server records. */
  static async start(deps: McpEndpointDeps): Promise<McpEndpoint> {
    const endpoint = new McpEndpoint(deps);
    const conn = { nc: deps.plane.nc, names: deps.plane.names };
    const [tools, servers] = await Promise.all([ToolStore.open(conn), McpServerStore.open(conn)]);
    const tw = await tools.watch(({ key, value }) => {
      if (value?.mcp) endpoint.tools.set(key, { ...value, mcp: value.mcp });
      else endpoint.tools.delete(key);
    });
    const sw = await servers.watch(({ key, value, malformed }) => {
      if (malformed) deps.log.warn({ key }, "skipping malformed MCP server record");
      if (value) endpoint.servers.set(key, value);
      else endpoint.servers.delete(key);
    });
    endpoint.stops = [() => void tw.stop(), () => void sw.stop()];
    return endpoint;
  }

  stop(): void {
    for (const s of this.stops) s();
    void this.handler.close();
  }

  /** Serves one request of `agent`, its body already read and bounded. */
  async fetch(request: Request, agent: string, body: unknown): Promise<Response> {
    const init = body as { method?: unknown; params?: { clientInfo?: Partial<Client> } } | null;
    if (init?.method === "initialize" && typeof init.params?.clientInfo?.name === "string")
      this.clients.set(agent, {
        name: init.params.clientInfo.name,
        version: String(init.params.clientInfo.version ?? ""),
      });
    return this.handler.fetch(request, {
      parsedBody: body,
      authInfo: { token: "", clientId: agent, scopes: [] },
    });
  }

  private visible(agent: string, server: string): boolean {
    const record = this.servers.get(server);
    if (!record) return false;
    if (record.groups === undefined) return true;
    const groups = this.deps.groupsOf(agent) ?? [];
    return record.groups.some((g) => groups.includes(g));
  }

  private server(agent: string): Server {
    const server = new Server(
      { name: "geode", version: "0.1.0" },
      { capabilities: { tools: {}, resources: {}, prompts: {} } },
    );
    const client = (): Client => {
      const v = server.getClientVersion();
      return v
        ? { name: v.name, version: v.version }
        : (this.clients.get(agent) ?? { name: "unknown", version: "" });
    };
    server.setRequestHandler("tools/list", async () => ({
      tools: [...this.tools.values()]
        .filter((t) => this.visible(agent, t.mcp.server))
        .map((t) => ({
          name: t.name,
          description: t.description,
          inputSchema: { type: "object", ...t.input_schema } as { type: "object" },
          annotations: t.mcp.annotations,
        })),
    }));
    server.setRequestHandler("tools/call", async (request, ctx) => {
      const { name } = request.params;
      const tool = this.tools.get(name);
      if (!tool || !this.visible(agent, tool.mcp.server)) return errorResult(`unknown tool ${name}`) as never;
      const corr = await this.correlation(agent, client(), ctx.mcpReq.signal);
      const result = await this.call(
        tool,
        request.params.arguments ?? {},
        { ...corr, tool_call_id: randomUUID() },
        ctx.mcpReq.signal,
      );
      return result as never;
    });
    const forward =
      (method: McpForwardedMethod, listKey?: "resources" | "resourceTemplates" | "prompts") =>
      async (request: { params?: Record<string, unknown> }, ctx: { mcpReq: { signal: AbortSignal } }) => {
        const corr = await this.correlation(agent, client(), ctx.mcpReq.signal);
        const params = { ...(request.params ?? {}) };
        delete params["_meta"];
        if (listKey !== undefined) return this.forwardList(agent, method, listKey, corr, ctx.mcpReq.signal);
        const field = method === "resources/read" ? "uri" : "name";
        const target = String(params[field] ?? "");
        const cut = target.indexOf("_");
        const srv = cut > 0 ? target.slice(0, cut) : "";
        if (!MCP_SERVER_NAME_PATTERN.test(srv) || !this.visible(agent, srv))
          throw new Error(`no MCP server for ${field} ${target}`);
        params[field] = target.slice(cut + 1);
        this.deps.plane.timeline(
          "mcp.read",
          { server: srv, method, uri_or_name: target.slice(0, 2048) },
          corr,
        );
        const reply = await requestJson<{ result: Record<string, unknown> }>(
          this.deps.plane.nc,
          this.deps.plane.names.mcpForward(srv),
          { method, params },
          { timeoutMs: this.deps.hookTimeoutMs, signal: ctx.mcpReq.signal },
        );
        return reply.result as never;
      };
    server.setRequestHandler("resources/list", forward("resources/list", "resources"));
    server.setRequestHandler(
      "resources/templates/list",
      forward("resources/templates/list", "resourceTemplates"),
    );
    server.setRequestHandler("prompts/list", forward("prompts/list", "prompts"));
    server.setRequestHandler("resources/read", forward("resources/read") as never);
    server.setRequestHandler("prompts/get", forward("prompts/get") as never);
    return server;
  }

  /** A list method of every visible server, each item's uri (or name) given the `{server}_` prefix. */
  private async forwardList(
    agent: string,
    method: McpForwardedMethod,
    key: "resources" | "resourceTemplates" | "prompts",
    corr: Correlation,
    signal: AbortSignal,
  ): Promise<never> {
    const field = key === "resources" ? "uri" : key === "resourceTemplates" ? "uriTemplate" : "name";
    const servers = [...this.servers.keys()].filter((s) => this.visible(agent, s));
    const lists = await Promise.all(
      servers.map(async (srv) => {
        this.deps.plane.timeline("mcp.read", { server: srv, method, uri_or_name: "" }, corr);
        try {
          const reply = await requestJson<{ result: Record<string, unknown> }>(
            this.deps.plane.nc,
            this.deps.plane.names.mcpForward(srv),
            { method, params: {} },
            { timeoutMs: this.deps.hookTimeoutMs, signal },
          );
          const items = (reply.result?.[key] ?? []) as Record<string, unknown>[];
          return items.map((i) => ({ ...i, [field]: `${srv}_${String(i[field] ?? "")}` }));
        } catch (err) {
          this.deps.log.warn({ server: srv, method, err_type: (err as Error).name }, "MCP forward failed");
          return [];
        }
      }),
    );
    return { [key]: lists.flat() } as never;
  }

  /** The session of (agent, client name): a new one after `sessionIdleMs` without a call. */
  private async correlation(agent: string, client: Client, signal: AbortSignal): Promise<Correlation> {
    const key = `${agent}\u0000${client.name}`;
    const now = Date.now();
    let s = this.sessions.get(key);
    if (!s || now - s.last > this.deps.sessionIdleMs) {
      s = { session_id: `mcp-${agent}-${slug(client.name)}-${now.toString(36)}`, last: now };
      this.sessions.set(key, s);
    }
    s.last = now;
    const start = correlationOf({ session_id: s.session_id }, 0);
    const provider = `${client.name} ${client.version}`.trim().slice(0, 128);
    const generation = await this.deps.sessions.ensure({ kind: "mcp", name: agent, provider }, start, signal);
    return { ...start, session_generation: generation };
  }

  private async call(
    tool: ToolDefinition,
    args: Record<string, unknown>,
    correlation: Correlation,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const limit = tool.timeout_ms ?? this.deps.toolTimeoutMs;
    const waitMs =
      (limit === 0 ? 86_400_000 : limit) + this.deps.plane.approvalTimeoutMs + this.deps.hookTimeoutMs;
    let reply: ToolExecuteReply;
    try {
      reply = await requestJson(
        this.deps.plane.nc,
        this.deps.plane.names.toolExecute,
        ToolExecuteLeg.request.encode({ tool_name: tool.name, arguments: args, correlation }),
        { timeoutMs: waitMs, signal, reply: ToolExecuteLeg.reply },
      );
    } catch (err) {
      return errorResult(err instanceof Error ? err.message : String(err));
    }
    // `failed` is a call that ran and answered with an error result: the upstream's own, passed on.
    const answered = reply.status === "failed" && reply.executed;
    if (reply.status !== "completed" && reply.status !== "replayed" && !answered)
      return errorResult(reply.reason || `the call was ${reply.status}`);
    let result: Record<string, unknown> = reply.result;
    if (isResultRef(result)) {
      try {
        result = await this.results.get(result);
      } catch (err) {
        return errorResult(err instanceof Error ? err.message : String(err));
      }
    }
    const out: CallToolResult = Array.isArray(result["content"])
      ? { ...result, content: [...(result["content"] as Record<string, unknown>[])] }
      : {
          content: [{ type: "text", text: JSON.stringify(result) }],
          ...(reply.has_error ? { isError: true } : {}),
        };
    for (const text of reply.additional_context) out.content.push({ type: "text", text });
    return out;
  }
}
