import {
  type BusConnection,
  busParts,
  type Logger,
  type Responder,
  RuntimeEventBus,
  serveRequests,
} from "@geode/bus";
import {
  ErrorCode,
  GeodeError,
  type McpForwardRequest,
  McpForwardRequestSchema,
  type McpServerRecord,
  type McpServerState,
  type Names,
  parseOrThrow,
} from "@geode/contracts";
import { configuredResultInlineBytes, type RunningService, type ServiceHealth } from "@geode/service";
import { McpServerStore, type RecordWatch, ResultStore, ToolStore } from "@geode/state";
import { MCP_BRIDGE_DEFAULTS, type McpBridgeLimits } from "./mcp-bridge-config.js";
import { Upstream, upstreamError } from "./upstream.js";

export interface McpBridgeOptions {
  /** The connection, with the interceptors its doors run (a service's `ServiceContext.bus`). */
  nc: BusConnection;
  names: Names;
  log: Logger;
  /** Limits and timeouts (`MCP_BRIDGE_ENV`); each defaults to `MCP_BRIDGE_DEFAULTS`. */
  limits?: Partial<McpBridgeLimits>;
  /** Where `env` pass-through names and `$VARIABLE` header values are looked up; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The event publisher; default one of its own (source `mcp-bridge`). */
  events?: RuntimeEventBus;
  /** Results over this many bytes travel through `{ns}_results`; default `GEODE_RESULT_INLINE_BYTES`. */
  resultInlineBytes?: number;
}

export interface McpBridge extends RunningService {
  /** Each upstream's live state, by name (what the health reply's `servers` carries). */
  servers(): McpServerState[];
}

/**
 * The mcp-bridge (DESIGN section 19): follows KV `{ns}_mcp_servers` (a bad record is skipped and
 * logged), keeps one SDK client per upstream, registers each upstream tool as the remote tool
 * `{server}_{tool}` in `{ns}_tools` and serves its terminal with the upstream's `tools/call`,
 * serves `{ns}.mcp.forward.{server}` for resources and prompts, and publishes
 * `mcp_server_connected` / `mcp_server_failed`.
 */
export async function startMcpBridge(options: McpBridgeOptions): Promise<McpBridge> {
  const { names, log } = options;
  const conn = { ...busParts(options.nc), names };
  const limits: McpBridgeLimits = { ...MCP_BRIDGE_DEFAULTS, ...options.limits };
  const events =
    options.events ?? (await RuntimeEventBus.create({ nc: conn, names, source: "mcp-bridge", log }));
  const deps = {
    conn,
    tools: await ToolStore.open(conn),
    results: new ResultStore(conn),
    events,
    log,
    limits,
    resultInlineBytes: options.resultInlineBytes ?? configuredResultInlineBytes(),
    env: options.env ?? process.env,
  };
  const upstreams = new Map<string, { upstream: Upstream; forward: Responder }>();
  let chain: Promise<void> = Promise.resolve();

  const forwardOf = (server: string) =>
    serveRequests(
      conn,
      names.mcpForward(server),
      {
        queue: "mcp-bridge",
        log,
        request: {
          decode: (b: unknown) => parseOrThrow(McpForwardRequestSchema, b, ErrorCode.InvalidRequest),
        },
      },
      async (req: McpForwardRequest) => {
        const entry = upstreams.get(server);
        if (!entry) throw new GeodeError(ErrorCode.Unavailable, `no MCP server ${server}`);
        return forward(entry.upstream, server, req, limits.callTimeoutMs);
      },
    );

  const remove = async (name: string, reason?: string) => {
    const entry = upstreams.get(name);
    if (!entry) return;
    upstreams.delete(name);
    await Promise.all([entry.forward.drain(), entry.upstream.stop(reason)]);
  };
  const apply = async (name: string, record: McpServerRecord | null) => {
    const current = upstreams.get(name);
    if (current && record && JSON.stringify(current.upstream.record) === JSON.stringify(record)) return;
    await remove(name);
    if (!record) return;
    const upstream = new Upstream(record, deps);
    upstreams.set(name, { upstream, forward: forwardOf(name) });
    upstream.start();
  };

  const store = await McpServerStore.open(conn);
  await removeOrphans(store, deps.tools, log);
  const watch: RecordWatch = await store.watch(
    (change) => {
      if (change.malformed)
        log.warn({ server: change.key.slice(0, 64) }, "MCP server record is not valid; skipped");
      // A change that fails is logged, never left in the chain: the next ones still apply.
      const record = change.malformed ? null : change.value;
      chain = chain
        .then(() => apply(change.key, record))
        .catch((err) => log.error({ err, server: change.key.slice(0, 64) }, "MCP server change failed"));
    },
    (err) => log.warn({ err }, "MCP server watch failed"),
  );

  const servers = () =>
    [...upstreams.values()].map((e) => e.upstream.state()).sort((a, b) => (a.name < b.name ? -1 : 1));
  return {
    servers,
    health: () => bridgeHealth(servers()),
    async stop() {
      await watch.stop();
      await chain;
      await Promise.all([...upstreams.keys()].map((name) => remove(name, "mcp-bridge stopped")));
      await events.flush();
    },
  };
}

/** Health: always ok (an upstream failing is the upstream's problem), naming the failing ones. */
function bridgeHealth(list: McpServerState[]): ServiceHealth {
  const failed = list.filter((s) => s.state === "failed").map((s) => s.name);
  return {
    status: "ok",
    ...(failed.length > 0 ? { note: `MCP servers failing: ${failed.join(", ")}` } : {}),
    servers: list,
  };
}

/** One forwarded resources or prompts request, answered by the upstream `server`. */
async function forward(
  upstream: Upstream,
  server: string,
  req: McpForwardRequest,
  callTimeoutMs: number,
): Promise<{ result: unknown }> {
  const client = upstream.connected();
  const timeout = Math.min(req.timeout_ms ?? callTimeoutMs, callTimeoutMs);
  const params = req.params as Record<string, unknown>;
  const paged = typeof params["cursor"] === "string" ? (params as never) : undefined;
  // A server without the capability has nothing to list (asked anyway, the SDK says so on
  // the console, a line outside the service's log) and nothing to read.
  const capabilities = client.getServerCapabilities() ?? {};
  const family = req.method.startsWith("prompts/") ? "prompts" : "resources";
  if (capabilities[family] === undefined) {
    if (req.method === "resources/list") return { result: { resources: [] } };
    if (req.method === "resources/templates/list") return { result: { resourceTemplates: [] } };
    if (req.method === "prompts/list") return { result: { prompts: [] } };
    throw new GeodeError(ErrorCode.InvalidRequest, `MCP server ${server} has no ${family}`);
  }
  try {
    switch (req.method) {
      case "resources/list":
        return { result: await client.listResources(paged, { timeout }) };
      case "resources/templates/list":
        return { result: await client.listResourceTemplates(paged, { timeout }) };
      case "prompts/list":
        return { result: await client.listPrompts(paged, { timeout }) };
      case "resources/read":
        return { result: await client.readResource(params as never, { timeout }) };
      case "prompts/get":
        return { result: await client.getPrompt(params as never, { timeout }) };
    }
  } catch (err) {
    throw upstreamError(server, err);
  }
}

/**
 * Removes MCP tools in `{ns}_tools` whose server has no (valid) record: registered by a bridge
 * process that was killed before it could remove them when their record went away. Nothing
 * serves them, and an agent listing them would only meet errors.
 */
async function removeOrphans(store: McpServerStore, tools: ToolStore, log: Logger): Promise<void> {
  const known = new Set((await store.list()).map((r) => r.name));
  for (const definition of await tools.list()) {
    const server = definition.mcp?.server;
    if (server === undefined || known.has(server)) continue;
    await tools.remove(definition.name).catch(() => undefined);
    log.info({ server, tool: definition.name }, "MCP tool of no configured server removed");
  }
}
