import { parseArgs } from "node:util";
import {
  Client,
  ProtocolError,
  ProtocolErrorCode,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { Server } from "@modelcontextprotocol/server";
import { StdioServerTransport, serveStdio } from "@modelcontextprotocol/server/stdio";
import { type CommandModule, UsageError } from "../command.js";
import { TOKEN_ENV } from "../connect/hook-command.js";
import { hookEndpoint } from "./hook-shim.js";

/** The gateway's MCP endpoint path (DESIGN section 19). */
const MCP_PATH = "/v1/mcp";
/**
 * The longest the proxy waits for the gateway on its own. A call may wait for a person's approval;
 * the client's own timeout is what limits it (its cancellation is passed on).
 */
const FORWARD_LIMIT_MS = 86_400_000;

/** Every request the proxy forwards as it came (the gateway answers all of them). */
const FORWARDED = [
  "tools/list",
  "tools/call",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "prompts/list",
  "prompts/get",
] as const;
type Forwarded = (typeof FORWARDED)[number];

interface ClientInfo {
  name: string;
  version: string;
}

interface Upstream {
  /** Forwards one request; `client` is the client this proxy serves, as it named itself. */
  request(
    method: Forwarded,
    params: Record<string, unknown> | undefined,
    options: { signal: AbortSignal; client: ClientInfo | undefined },
  ): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * One SDK client to the gateway, connected at the first request with the name and version of the
 * client this proxy serves (the gateway's session is per agent and client name); a failed connect
 * is tried again at the next request.
 */
function upstream(endpoint: URL, token: string, log: (line: string) => void): Upstream {
  let connecting: Promise<Client> | undefined;
  const connect = (info: ClientInfo) => {
    connecting ??= (async () => {
      const client = new Client(info, { versionNegotiation: { mode: "auto" } });
      client.onerror = (err) => log(`agent gateway: ${err.message}`);
      await client.connect(
        new StreamableHTTPClientTransport(endpoint, {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      return client;
    })().catch((err: unknown) => {
      connecting = undefined;
      throw err;
    });
    return connecting;
  };
  return {
    async request(method, params, { signal, client: info }) {
      const client = await connect(info ?? { name: "geode-mcp-stdio", version: "0.1.0" });
      // The client's protocol envelope belongs to its own connection, not to the gateway's.
      const { _meta: _dropped, ...rest } = params ?? {};
      return client.request({ method, params: rest }, { signal, timeout: FORWARD_LIMIT_MS });
    },
    async close() {
      const client = await connecting?.catch(() => undefined);
      await client?.close();
    },
  };
}

/** A gateway's answer or failure as the client should see it: its own JSON-RPC errors pass through. */
function passOn(err: unknown, endpoint: URL): ProtocolError {
  if (err instanceof ProtocolError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const hint = /\b401\b/.test(message)
    ? `; it does not know the token in ${TOKEN_ENV} (see 'geode agents ls')`
    : "";
  return new ProtocolError(
    ProtocolErrorCode.InternalError,
    `agent gateway ${endpoint.origin}: ${message}${hint}`,
  );
}

/**
 * `geode mcp stdio [--url URL]`: an MCP server on stdin/stdout for clients that only start stdio
 * servers. Every request goes to the agent gateway's `POST /v1/mcp` with the agent token from
 * `GEODE_AGENT_TOKEN`, so each tool call passes the plane's tool boundary; stdout carries only
 * protocol messages, everything else goes to stderr.
 */
export const mcpStdioCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({ args, options: { url: { type: "string" } } });
    let endpoint: URL;
    try {
      endpoint = new URL(hookEndpoint(values.url, io.env, "claude-code", MCP_PATH));
    } catch {
      throw new UsageError(`--url is not a URL: ${values.url}`);
    }
    const token = io.env[TOKEN_ENV];
    if (!token) {
      io.err(
        `geode mcp stdio: ${TOKEN_ENV} is not set; set it to the agent's token (from 'geode agents add NAME') in the MCP client's configuration of this server\n`,
      );
      return 1;
    }
    const log = (line: string) => io.err(`geode mcp stdio: ${line}\n`);
    const gateway = upstream(endpoint, token, log);
    const factory = () => {
      const server = new Server(
        { name: "geode", version: "0.1.0" },
        { capabilities: { tools: {}, resources: {}, prompts: {} } },
      );
      for (const method of FORWARDED)
        server.setRequestHandler(method, async (request: { params?: Record<string, unknown> }, ctx) => {
          const v = server.getClientVersion();
          const client = v ? { name: v.name, version: v.version } : undefined;
          try {
            return (await gateway.request(method, request.params, {
              signal: ctx.mcpReq.signal,
              client,
            })) as never;
          } catch (err) {
            const refused = passOn(err, endpoint);
            log(`${method}: ${refused.message}`);
            throw refused;
          }
        });
      return server;
    };
    const transport = new StdioServerTransport();
    const closed = new Promise<void>((resolve) => {
      process.stdin.once("close", resolve);
      process.stdin.once("end", resolve);
    });
    const handle = serveStdio(factory, {
      transport,
      onerror: (err) => log(err.message),
    });
    log(`serving on stdio, forwarding to ${endpoint.toString()}`);
    await closed;
    await handle.close();
    await gateway.close();
    return 0;
  },
};
