import type { GeodeConnection, Logger, Responder, RuntimeEventBus } from "@geode/bus";
import { serveRequests } from "@geode/bus";
import {
  ErrorCode,
  ErrorKind,
  GeodeError,
  type McpServerRecord,
  type McpServerState,
  type McpToolAnnotations,
  McpToolAnnotationsSchema,
  mcpToolEffect,
  mcpToolName,
  sanitizeText,
  type ToolDefinition,
  ToolTerminalLeg,
  toolGlob,
} from "@geode/contracts";
import type { ResultStore, ToolStore } from "@geode/state";
import { Client, StreamableHTTPClientTransport, type Tool } from "@modelcontextprotocol/client";
import { getDefaultEnvironment } from "@modelcontextprotocol/client/stdio";
import type { McpBridgeLimits } from "./mcp-bridge-config.js";
import { StrictStdioTransport } from "./stdio-transport.js";

const LAST_ERROR_MAX = 1024;
const STDERR_LINE_MAX = 300;
const DESCRIPTION_MAX = 4096;

/** What an upstream needs from the bridge. */
export interface UpstreamDeps {
  conn: GeodeConnection;
  tools: ToolStore;
  results: ResultStore;
  events: RuntimeEventBus;
  log: Logger;
  limits: McpBridgeLimits;
  resultInlineBytes: number;
  env: NodeJS.ProcessEnv;
}

interface ServedEntry {
  definition: ToolDefinition;
  upstreamTool: string;
  responder: Responder;
}

/** The first protocol revision without `ping` (and without sessions): dates compare as strings. */
const STATELESS_REVISION = "2026-07-28";

/** How long a stopped stdio server has to exit after SIGTERM before it is killed. */
const STOP_GRACE_MS = 2_000;

/** Whether a process of ours with this pid still runs. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone meanwhile
  }
}

/** One line, bounded: what an error says without stacks or newlines. */
function oneLine(text: string, max = LAST_ERROR_MAX): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function annotationsOf(tool: Tool): McpToolAnnotations {
  const raw = (tool.annotations ?? {}) as Record<string, unknown>;
  const picked: Record<string, unknown> = {};
  for (const key of ["title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"])
    if (raw[key] !== undefined) picked[key] = raw[key];
  const parsed = McpToolAnnotationsSchema.safeParse(picked);
  return parsed.success ? parsed.data : {};
}

/**
 * One upstream MCP server: its SDK client (a stdio child the bridge starts, or an HTTP
 * connection), its tools registered in `{ns}_tools` and served on their terminals, restarts with
 * backoff after a failure.
 */
export class Upstream {
  private client: Client | undefined;
  private epoch = 0;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private pinger: NodeJS.Timeout | undefined;
  /** The pid of the stdio server process last started, until it is known to be gone. */
  private child: number | null = null;
  /** Failures in a row, for the backoff: only a connection that held for a while ends the streak. */
  private streak = 0;
  private readonly served = new Map<string, ServedEntry>();
  private stderrLine = "";
  /** The current stdio connection, whose `failure` says why it ended itself. */
  private stdio: StrictStdioTransport | undefined;
  private refreshing: Promise<void> = Promise.resolve();
  private status: McpServerState;

  constructor(
    readonly record: McpServerRecord,
    private readonly deps: UpstreamDeps,
  ) {
    this.status = {
      name: record.name,
      transport: record.transport,
      state: "connecting",
      tools: 0,
      protocol_version: null,
      last_error: null,
      attempts: 0,
      since: Date.now(),
    };
  }

  /** Its live state, as the health reply carries it. */
  state(): McpServerState {
    return { ...this.status, tools: this.served.size };
  }

  /** The connected client, or a coded error saying the server is not connected (nothing was sent). */
  connected(): Client {
    if (!this.client || this.status.state !== "connected")
      throw notStarted(`MCP server ${this.record.name} is not connected`);
    return this.client;
  }

  start(): void {
    void this.attempt();
  }

  private transport(epoch: number) {
    const r = this.record;
    if (r.transport === "stdio") {
      const env: Record<string, string> = { ...getDefaultEnvironment() };
      for (const name of r.env ?? []) {
        const value = this.deps.env[name];
        if (value !== undefined) env[name] = value;
      }
      const t = new StrictStdioTransport({
        command: r.command ?? "",
        args: r.args ?? [],
        env,
        maxMessageBytes: this.deps.limits.resultMaxBytes + 64 * 1024,
      });
      this.stdio = t;
      // Its pid, for the kill that makes sure it is gone (the SDK forgets it once it closes).
      const start = t.start.bind(t);
      t.start = async () => {
        const started = start();
        // Started after a stop or a failure of this attempt (the SDK starts it a few ticks into
        // connect): nothing would ever stop it but this.
        if (epoch !== this.epoch || this.stopped) {
          if (t.pid !== null) signal(t.pid, "SIGKILL");
        } else this.child = t.pid;
        await started;
      };
      // Drained always; only the last line is kept, bounded, for the last error.
      t.stderr.on("data", (chunk: Buffer) => {
        const lines = chunk
          .toString("utf8")
          .split("\n")
          .filter((l) => l.trim() !== "");
        const last = lines.at(-1);
        if (last !== undefined) this.stderrLine = oneLine(last, STDERR_LINE_MAX);
      });
      return t;
    }
    const headers: Record<string, string> = {};
    for (const [header, ref] of Object.entries(r.headers ?? {})) {
      const value = this.deps.env[ref.slice(1)];
      if (value !== undefined) headers[header] = value;
      // Sent without it, the server's refusal (401) would be all an operator sees.
      else
        this.deps.log.warn(
          { server: r.name, header, variable: ref.slice(1) },
          "MCP server header names a variable the mcp-bridge does not have; sent without it",
        );
    }
    return new StreamableHTTPClientTransport(new URL(r.url ?? ""), { requestInit: { headers } });
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    const epoch = ++this.epoch;
    this.status = { ...this.status, state: "connecting", since: Date.now() };
    this.stderrLine = "";
    this.stdio = undefined;
    const client = new Client(
      { name: "geode-mcp-bridge", version: "0.1.0" },
      {
        // HTTP: probe `server/discover`, fall back to `initialize`. stdio: `initialize` at once; the
        // SDK's default probe would start the server's command a second time, as a throwaway
        // process, on every connection.
        versionNegotiation: { mode: this.record.transport === "http" ? "auto" : "legacy" },
        listChanged: {
          tools: {
            autoRefresh: false,
            onChanged: () => {
              if (epoch === this.epoch && this.status.state === "connected") this.queueRefresh(epoch);
            },
          },
        },
      },
    );
    client.onclose = () => {
      if (epoch === this.epoch && !this.stopped)
        void this.fail(
          epoch,
          new Error(this.stdio?.failure ? `connection closed (${this.stdio.failure})` : "connection closed"),
        );
    };
    this.client = client;
    const { connectTimeoutMs } = this.deps.limits;
    try {
      await client.connect(this.transport(epoch) as never, { timeout: connectTimeoutMs });
      if (epoch !== this.epoch) return void client.close().catch(() => undefined);
      await this.refreshTools(epoch);
      if (epoch !== this.epoch) return void client.close().catch(() => undefined);
      const protocol = client.getNegotiatedProtocolVersion() ?? "";
      this.status = {
        ...this.status,
        state: "connected",
        protocol_version: protocol,
        last_error: null,
        attempts: 0,
        since: Date.now(),
      };
      this.watchLiveness(epoch, client);
      this.deps.log.info({ server: this.record.name, tools: this.served.size }, "MCP server connected");
      void this.deps.events.emit("mcp_server_connected", {
        server: this.record.name,
        transport: this.record.transport,
        protocol_version: protocol.slice(0, 64),
        tools: this.served.size,
      });
    } catch (err) {
      await this.fail(epoch, err);
    }
  }

  /**
   * Pings the upstream every `pingIntervalMs`: an HTTP server that went away (no connection to
   * close) or a stdio server that hangs fails like one that exited. An error the server answers
   * with (a JSON-RPC error, numeric code) still proves it alive. The stateless 2026-07-28 revision
   * has no `ping`: a server that speaks it is asked `server/discover` instead.
   */
  private watchLiveness(epoch: number, client: Client): void {
    const { pingIntervalMs, connectTimeoutMs } = this.deps.limits;
    const stateless = (client.getNegotiatedProtocolVersion() ?? "") >= STATELESS_REVISION;
    let inFlight = false;
    this.pinger = setInterval(() => {
      if (inFlight || epoch !== this.epoch) return;
      inFlight = true;
      const options = { timeout: connectTimeoutMs };
      (stateless ? client.discover(options) : client.ping(options))
        .catch((err: unknown) => {
          if (typeof (err as { code?: unknown }).code === "number") return;
          const message = err instanceof Error ? err.message : String(err);
          return this.fail(epoch, new Error(`ping failed: ${message}`));
        })
        .finally(() => {
          inFlight = false;
        });
    }, pingIntervalMs);
    this.pinger.unref();
  }

  private async fail(epoch: number, err: unknown): Promise<void> {
    if (epoch !== this.epoch || this.stopped) return;
    this.epoch++;
    clearInterval(this.pinger);
    const base = err instanceof Error ? err.message : String(err);
    // What a server prints when it fails can hold a key it was given: masked before it is kept.
    const error = oneLine(
      sanitizeText(this.stderrLine ? `${base}: ${this.stderrLine}` : base, 4 * LAST_ERROR_MAX),
    );
    const attempts = this.status.attempts + 1;
    const { restartMinMs, restartMaxMs } = this.deps.limits;
    // A server that crashes soon after each start backs off like one that never starts.
    const up = this.status.state === "connected" ? Date.now() - this.status.since : 0;
    if (up >= restartMaxMs) this.streak = 0;
    this.streak++;
    const retry = Math.min(restartMaxMs, restartMinMs * 2 ** Math.min(this.streak - 1, 30));
    this.status = { ...this.status, state: "failed", last_error: error, attempts, since: Date.now() };
    this.deps.log.warn(
      { server: this.record.name, error, attempt: attempts, retry_in_ms: retry },
      "MCP server failed",
    );
    const client = this.client;
    this.client = undefined;
    // A failed stdio server is dead or misbehaving (hung, silent): killed before the next start.
    await this.killChild(0);
    await Promise.all([this.removeTools(), client?.close().catch(() => undefined)]);
    void this.deps.events.emit("mcp_server_failed", {
      server: this.record.name,
      transport: this.record.transport,
      error,
      attempt: attempts,
      retry_in_ms: retry,
    });
    if (!this.stopped) this.timer = setTimeout(() => void this.attempt(), retry);
  }

  /** Stops for good: the tools removed, the client closed (a stdio child stopped). */
  async stop(reason = "server removed"): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.epoch++;
    clearTimeout(this.timer);
    clearInterval(this.pinger);
    const client = this.client;
    this.client = undefined;
    await Promise.all([this.removeTools(), client?.close().catch(() => undefined)]);
    // The SDK's close ends stdin, then signals; a client it had closed already signals nothing.
    await this.killChild(STOP_GRACE_MS);
    void this.deps.events.emit("mcp_server_failed", {
      server: this.record.name,
      transport: this.record.transport,
      error: reason,
      attempt: Math.max(1, this.status.attempts),
      retry_in_ms: null,
    });
  }

  /** Makes sure the last stdio server process is gone: SIGTERM, `graceMs` to exit, then SIGKILL. */
  private async killChild(graceMs: number): Promise<void> {
    const pid = this.child;
    this.child = null;
    if (pid === null || !running(pid)) return;
    if (graceMs > 0) {
      signal(pid, "SIGTERM");
      const deadline = Date.now() + graceMs;
      while (running(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    }
    if (running(pid)) signal(pid, "SIGKILL");
  }

  private queueRefresh(epoch: number): void {
    this.refreshing = this.refreshing
      .then(() => this.refreshTools(epoch))
      .catch((err) => this.fail(epoch, err));
  }

  /** Lists the upstream's tools (every page, bounded) and makes `{ns}_tools` say the same. */
  private async refreshTools(epoch: number): Promise<void> {
    const client = this.client;
    if (!client) return;
    const { maxTools, schemaMaxBytes, connectTimeoutMs } = this.deps.limits;
    const allowed = this.record.tools ? toolGlob(this.record.tools) : () => true;
    const approve = toolGlob(this.record.approve ?? []);
    const listed: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 64; page++) {
      const res = await client.listTools(cursor ? { cursor } : undefined, { timeout: connectTimeoutMs });
      listed.push(...res.tools);
      cursor = res.nextCursor;
      if (!cursor || listed.length >= maxTools * 4) break;
    }
    if (epoch !== this.epoch) return;
    const wanted = new Map<string, ServedEntry["definition"] & { upstream: string }>();
    for (const tool of listed) {
      if (!allowed(tool.name)) continue;
      if (wanted.size >= maxTools) {
        this.deps.log.warn(
          { server: this.record.name, max_tools: maxTools },
          "MCP server has more tools than allowed; the rest left out",
        );
        break;
      }
      // As the server gave it, `$schema` included: the executor validates in the dialect it names.
      const schema = (tool.inputSchema ?? { type: "object" }) as Record<string, unknown>;
      if (Buffer.byteLength(JSON.stringify(schema)) > schemaMaxBytes) {
        this.deps.log.warn(
          { server: this.record.name, tool: oneLine(tool.name, 128) },
          "MCP tool input schema too large; left out",
        );
        continue;
      }
      const annotations = annotationsOf(tool);
      const name = mcpToolName(this.record.name, tool.name);
      wanted.set(name, {
        name,
        description: (tool.description ?? "").slice(0, DESCRIPTION_MAX),
        input_schema: schema,
        effect: mcpToolEffect(this.record, tool.name, annotations, (g, n) => toolGlob([g])(n)),
        requires_approval: approve(tool.name),
        // The bridge answers first (its own call limit), so the executor hears an error, not a timeout.
        timeout_ms: this.deps.limits.callTimeoutMs + 5_000,
        mcp: { server: this.record.name, tool: tool.name.slice(0, 1024), annotations },
        upstream: tool.name,
      });
    }
    if (this.served.size === 0) await this.removeStale(wanted);
    for (const [name, entry] of [...this.served]) {
      if (wanted.has(name)) continue;
      this.served.delete(name);
      await entry.responder.drain();
      await this.deps.tools.remove(name).catch(() => undefined);
    }
    for (const [name, w] of wanted) {
      // Stopped or failed meanwhile: what that removed must not be registered again.
      if (epoch !== this.epoch) return;
      const { upstream, ...definition } = w;
      const existing = this.served.get(name);
      if (existing) {
        if (JSON.stringify(existing.definition) !== JSON.stringify(definition)) {
          existing.definition = definition;
          existing.upstreamTool = upstream;
          await this.deps.tools.publish(definition);
        }
        continue;
      }
      if (!(await this.nameIsFree(name))) continue;
      const entry: ServedEntry = { definition, upstreamTool: upstream, responder: this.serveTerminal(name) };
      this.served.set(name, entry);
      await this.deps.conn.nc.flush();
      await this.deps.tools.publish(definition);
      if (epoch !== this.epoch) await this.deps.tools.remove(name).catch(() => undefined);
    }
  }

  /**
   * Whether `name` is free for this server in `{ns}_tools`: unused, or its own (an earlier
   * registration). Another provider's tool of that name is never overwritten nor its terminal
   * served beside it (its calls would be split between the two).
   */
  private async nameIsFree(name: string): Promise<boolean> {
    const current = await this.deps.tools.get(name);
    if (!current || current.mcp?.server === this.record.name) return true;
    this.deps.log.warn(
      { server: this.record.name, tool: name },
      "a tool of this name is registered by another provider; the MCP tool is left out",
    );
    return false;
  }

  /**
   * Removes definitions of this server in `{ns}_tools` that it no longer has: ones an earlier
   * bridge process registered and could not remove (it was killed), which nothing would serve.
   */
  private async removeStale(wanted: Map<string, unknown>): Promise<void> {
    const registered = await this.deps.tools.list().catch(() => []);
    for (const definition of registered)
      if (definition.mcp?.server === this.record.name && !wanted.has(definition.name))
        await this.deps.tools.remove(definition.name).catch(() => undefined);
  }

  /** `{ns}.tool.terminal.{name}`: one upstream `tools/call` per approved call, never retried. */
  private serveTerminal(name: string): Responder {
    const { conn, log, limits, results, resultInlineBytes } = this.deps;
    return serveRequests(
      conn,
      conn.names.toolTerminal(name),
      { queue: `tool.${name}`, request: ToolTerminalLeg.request, log },
      async (call) => {
        if (call.tool_name !== name)
          throw new GeodeError(
            ErrorCode.InvalidRequest,
            `this terminal serves ${name}, not ${call.tool_name}`,
          );
        const entry = this.served.get(name);
        if (!entry) throw notStarted(`${name} is no longer served`);
        const client = this.connected();
        const stdio = this.stdio;
        let result: Record<string, unknown>;
        try {
          result = (await client.callTool(
            { name: entry.upstreamTool, arguments: call.arguments },
            { timeout: limits.callTimeoutMs },
          )) as Record<string, unknown>;
        } catch (err) {
          throw callError(this.record.name, err, limits.callTimeoutMs, stdio?.failure);
        }
        const bytes = Buffer.byteLength(JSON.stringify(result));
        if (bytes > limits.resultMaxBytes)
          throw new GeodeError(
            ErrorCode.Internal,
            `the result of ${name} is ${bytes} bytes, over GEODE_MCP_RESULT_MAX_BYTES (${limits.resultMaxBytes})`,
          );
        const out = await results.offload(result, {
          inlineBytes: resultInlineBytes,
          writer: { tool: name },
          toolName: name,
        });
        return ToolTerminalLeg.reply.encode({ result: out.result, has_error: result["isError"] === true });
      },
    );
  }

  private async removeTools(): Promise<void> {
    const entries = [...this.served];
    this.served.clear();
    await Promise.all(
      entries.map(async ([name, entry]) => {
        await entry.responder.drain();
        await this.deps.tools.remove(name).catch(() => undefined);
      }),
    );
  }
}

/** The terminal never began the call: the executor gives its admission back (a retry may run it). */
function notStarted(message: string): GeodeError {
  return new GeodeError(ErrorCode.Unavailable, message, { details: { kind: ErrorKind.NotStarted } });
}

/**
 * A failed upstream `tools/call` as the terminal's error reply. Not sent (no connection):
 * `not_started`, nothing happened. The server answered with an error: an error result. Sent, then
 * no answer in time or the connection lost (the server died, wrote what is not JSON-RPC, or a
 * message over the limit): `indeterminate`, since the call may have taken effect; the executor
 * keeps an effectful call's receipt admitted and never runs it again by itself.
 */
function callError(server: string, err: unknown, timeoutMs: number, failure?: string): GeodeError {
  if (err instanceof GeodeError) return err;
  const message = oneLine(err instanceof Error ? err.message : String(err), 512);
  const code = (err as { code?: unknown }).code;
  if (code === "NOT_CONNECTED") return notStarted(`MCP server ${server} is not connected`);
  const lost =
    code === "REQUEST_TIMEOUT"
      ? `did not answer within ${timeoutMs} ms (GEODE_MCP_CALL_TIMEOUT_MS)`
      : code === "CONNECTION_CLOSED" || code === "SEND_FAILED" || code === undefined
        ? `went away during the call (${oneLine(failure ?? message, 512)})`
        : undefined;
  if (lost === undefined) return new GeodeError(ErrorCode.InvalidRequest, `MCP server ${server}: ${message}`);
  return new GeodeError(ErrorCode.Indeterminate, `MCP server ${server} ${lost} after the call was sent`);
}

/** An upstream failure as a coded error: a timeout, a lost connection, or what the server said. */
export function upstreamError(server: string, err: unknown): GeodeError {
  if (err instanceof GeodeError) return err;
  const message = oneLine(err instanceof Error ? err.message : String(err), 512);
  const code = (err as { code?: unknown }).code;
  if (code === "REQUEST_TIMEOUT")
    return new GeodeError(ErrorCode.Timeout, `MCP server ${server} did not answer in time`);
  if (code === "CONNECTION_CLOSED" || code === "NOT_CONNECTED" || code === "SEND_FAILED")
    return new GeodeError(ErrorCode.Unavailable, `MCP server ${server} went away: ${message}`);
  return new GeodeError(ErrorCode.InvalidRequest, `MCP server ${server}: ${message}`);
}
