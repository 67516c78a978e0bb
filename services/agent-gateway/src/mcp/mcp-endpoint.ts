import { randomUUID } from "node:crypto";
import { type Logger, requestJson } from "@geode/bus";
import {
  type Correlation,
  ErrorCode,
  GeodeError,
  isResultRef,
  MCP_SERVER_NAME_PATTERN,
  type McpForwardedMethod,
  type McpServerRecord,
  sanitizeText,
  type ToolDefinition,
  ToolExecuteLeg,
  type ToolExecuteReply,
} from "@geode/contracts";
import { McpServerStore, ResultStore, ToolStore } from "@geode/state";
import {
  createMcpHandler,
  type McpHttpHandler,
  ProtocolError,
  ProtocolErrorCode,
  Server,
} from "@modelcontextprotocol/server";
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

/**
 * The `_meta` key of a `tools/call` that names its logical operation: a retry with the same key is
 * answered from the operation's receipt (replayed, `in_progress` or `indeterminate`), never run again.
 */
const OPERATION_KEY_META = "geode/operation_key";
/** The longest operation key a client may send (its scoped form stays within the executor's 256). */
const OPERATION_KEY_MAX = 128;
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * The executor's `operation_key` of a call: the client's key scoped by the agent's name, so two
 * agents never share an operation; undefined without one (each call is then its own operation).
 * A malformed key is `-32602`, and nothing runs.
 */
function scopedOperationKey(agent: string, meta: unknown): string | undefined {
  const raw =
    meta !== null && typeof meta === "object"
      ? (meta as Record<string, unknown>)[OPERATION_KEY_META]
      : undefined;
  if (raw === undefined) return undefined;
  const field = `_meta["${OPERATION_KEY_META}"]`;
  const wrong =
    typeof raw !== "string"
      ? `is ${raw === null ? "null" : typeof raw}, not a string`
      : raw.length === 0
        ? "is empty"
        : raw.length > OPERATION_KEY_MAX
          ? `has ${raw.length} characters, over ${OPERATION_KEY_MAX}`
          : CONTROL_CHARACTERS.test(raw)
            ? "has control characters"
            : null;
  if (wrong !== null)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `${field} ${wrong}: an operation key is a string of 1 to ${OPERATION_KEY_MAX} characters without control characters`,
    );
  return `mcp.${agent}.${raw as string}`;
}

/** Room left in a bus message beside a call's arguments, for what the legs after the gateway add. */
const ARGUMENTS_MARGIN_BYTES = 16 * 1024;

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
    this.results = new ResultStore(deps.plane.bus);
    this.handler = createMcpHandler((ctx) => this.server(ctx.authInfo?.clientId ?? ""), {
      legacy: "stateless",
      onerror: (err) => deps.log.debug({ err_type: err.name, message: err.message }, "mcp request refused"),
    });
  }

  /** Loads and follows the tools and server records. */
  static async start(deps: McpEndpointDeps): Promise<McpEndpoint> {
    const endpoint = new McpEndpoint(deps);
    const conn = deps.plane.bus;
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
      const operationKey = scopedOperationKey(agent, request.params._meta);
      const tool = this.tools.get(name);
      if (!tool || !this.visible(agent, tool.mcp.server)) return errorResult(`unknown tool ${name}`) as never;
      const corr = await this.correlation(agent, client(), ctx.mcpReq.signal);
      const result = await this.call(
        tool,
        request.params.arguments ?? {},
        { ...corr, tool_call_id: randomUUID() },
        operationKey,
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
          throw new ProtocolError(
            ProtocolErrorCode.InvalidParams,
            `no MCP server for ${field} ${oneLine(target, 256)}`,
          );
        params[field] = target.slice(cut + 1);
        this.deps.plane.timeline(
          "mcp.read",
          { server: srv, method, uri_or_name: sanitizeText(percentDecoded(target), 2048) },
          corr,
        );
        try {
          const reply = await requestJson<{ result: Record<string, unknown> }>(
            this.deps.plane.bus,
            this.deps.plane.names.mcpForward(srv),
            { method, params },
            { timeoutMs: this.deps.hookTimeoutMs, signal: ctx.mcpReq.signal },
          );
          return reply.result as never;
        } catch (err) {
          throw forwardError(srv, err);
        }
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
            this.deps.plane.bus,
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
    operationKey: string | undefined,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const limit = tool.timeout_ms ?? this.deps.toolTimeoutMs;
    const waitMs =
      (limit === 0 ? 86_400_000 : limit) + this.deps.plane.approvalTimeoutMs + this.deps.hookTimeoutMs;
    const request = ToolExecuteLeg.request.encode({
      tool_name: tool.name,
      arguments: args,
      correlation,
      ...(operationKey === undefined ? {} : { operation_key: operationKey }),
    });
    // Arguments travel inline on every leg (only results go by reference): refused here, clearly,
    // when they would not fit in one bus message, before anything is admitted or run.
    const bytes = Buffer.byteLength(JSON.stringify(request));
    const maxPayload = this.deps.plane.nc.info?.max_payload;
    if (maxPayload !== undefined && bytes + ARGUMENTS_MARGIN_BYTES > maxPayload)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `the arguments of ${tool.name} take ${bytes} bytes, over what one message of the plane's bus carries (max_payload ${maxPayload} bytes, less ${ARGUMENTS_MARGIN_BYTES} for the call's envelope): arguments this large are refused`,
      );
    let reply: ToolExecuteReply;
    try {
      reply = await requestJson(this.deps.plane.bus, this.deps.plane.names.toolExecute, request, {
        timeoutMs: waitMs,
        signal,
        reply: ToolExecuteLeg.reply,
      });
    } catch (err) {
      return errorResult(err instanceof Error ? err.message : String(err));
    }
    // `failed` is an error result of the terminal (the upstream's own `isError` result, or what
    // the bridge said went wrong): the model reads it like a completed call's.
    if (reply.status !== "completed" && reply.status !== "replayed" && reply.status !== "failed")
      return errorResult(reply.reason || `the call was ${reply.status}`);
    let result: Record<string, unknown> = reply.result;
    if (isResultRef(result)) {
      try {
        result = await this.results.get(result);
      } catch (err) {
        return errorResult(err instanceof Error ? err.message : String(err));
      }
    }
    const error = result["error"];
    const out: CallToolResult = Array.isArray(result["content"])
      ? { ...result, content: [...(result["content"] as Record<string, unknown>[])] }
      : reply.has_error && typeof error === "string"
        ? errorResult(error)
        : {
            content: [{ type: "text", text: JSON.stringify(result) }],
            ...(reply.has_error ? { isError: true } : {}),
          };
    for (const text of reply.additional_context) out.content.push({ type: "text", text });
    return out;
  }
}

/**
 * A forwarded read's failure as the JSON-RPC error the client reads: what the upstream refused
 * (unknown uri or name, bad arguments) is -32602 with its message; a server that is not there or
 * did not answer is -32603 saying so.
 */
function forwardError(server: string, err: unknown): ProtocolError {
  const message = oneLine(err instanceof Error ? err.message : String(err), 512);
  if (err instanceof GeodeError && err.code === ErrorCode.InvalidRequest)
    return new ProtocolError(ProtocolErrorCode.InvalidParams, message);
  if (err instanceof GeodeError && err.code === ErrorCode.Unavailable)
    return new ProtocolError(ProtocolErrorCode.InternalError, `MCP server ${server} is not available`);
  if (err instanceof GeodeError && err.code === ErrorCode.Timeout)
    return new ProtocolError(ProtocolErrorCode.InternalError, `MCP server ${server} did not answer in time`);
  return new ProtocolError(ProtocolErrorCode.InternalError, `MCP server ${server}: ${message}`);
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A URI as a reader sees it, so a secret hidden by percent-encoding is masked too. */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
