import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJson, type Logger, repeatedHeader } from "@geode/bus";
import {
  ErrorCode,
  GeodeError,
  parseTraceparent,
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
} from "@geode/contracts";
import { type HttpTimeouts, httpServerOptions, type ServiceObserver } from "@geode/service";
import { readBody } from "./read-body.js";
import { RefusedTokenLog } from "./refused-token-log.js";

/** Handles one parsed hook body of the agent named by the request's token. */
export type HookRoute = (request: {
  body: unknown;
  agent: string;
  signal: AbortSignal;
  /** The request URL's query (Copilot CLI's hook commands name their event there). */
  query: URLSearchParams;
}) => Promise<{ status: number; body: unknown }>;

export interface HttpRoutes {
  /** The agent a bearer token belongs to, or null. */
  identify(authorization: string | undefined): string | null;
  /** `POST` hook endpoints by path, one per agent kind. */
  hooks: ReadonlyMap<string, HookRoute>;
  /** Whether the gateway can reach the plane now (for `/healthz`). */
  healthy(): boolean;
  /** `POST /v1/mcp`: one MCP request of an agent, its JSON body read and bounded. */
  mcp?: {
    serve(request: Request, agent: string, body: unknown): Promise<Response>;
    /** Hostnames the Host header (and a browser's Origin) may name. */
    allowedHosts: readonly string[];
    maxBodyBytes: number;
  };
  /** `/v1/llm/{provider}/…`: the model providers' APIs (DESIGN section 21); answers on its own. */
  llm?: {
    prefix: string;
    serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
  };
}

/** The MCP endpoint's path. */
const MCP_PATH = "/v1/mcp";

/** OAuth discovery and registration probes of MCP clients: answered 404 at once (no OAuth here). */
const isOAuthProbe = (path: string) =>
  path.startsWith("/.well-known/oauth-") ||
  path.startsWith("/.well-known/openid-configuration") ||
  path === "/register";

const rpcError = (code: number, message: string) => ({ jsonrpc: "2.0", id: null, error: { code, message } });

function hostnameOf(value: string | undefined): string | null {
  if (value === undefined || value === "") return null;
  try {
    return new URL(value.includes("://") ? value : `http://${value}`).hostname;
  } catch {
    return null;
  }
}

/**
 * One MCP request: Host and Origin checked (403), the bearer token (401 with
 * `WWW-Authenticate: Bearer`), the body bounded (413 with a JSON-RPC error), then the SDK's
 * handler; its web Response is written back (JSON or an SSE stream).
 */
async function answerMcp(
  options: { routes: HttpRoutes; refused: RefusedTokenLog },
  mcp: NonNullable<HttpRoutes["mcp"]>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (refusedHostOrMethod(mcp, req, res)) return;
  const agent = options.routes.identify(req.headers.authorization);
  if (agent === null) {
    req.resume();
    options.refused.note(req.socket.remoteAddress, MCP_PATH, req.headers.authorization);
    res.writeHead(401, {
      "www-authenticate": "Bearer",
      "content-type": "application/json",
      connection: "close",
    });
    res.end(JSON.stringify(rpcError(-32001, "missing or unknown bearer token")));
    return;
  }
  const raw = await readBody(req, mcp.maxBodyBytes);
  if (raw === null) {
    send(
      res,
      413,
      rpcError(-32600, `request body over ${mcp.maxBodyBytes} bytes: arguments this large are refused`),
      true,
    );
    return;
  }
  let body: unknown;
  try {
    body = decodeJson(raw);
  } catch {
    send(res, 400, rpcError(-32700, "body is not UTF-8 JSON"));
    return;
  }
  const ac = new AbortController();
  res.once("close", () => {
    if (!res.writableEnded) ac.abort(new Error("the client closed the request"));
  });
  const response = await mcp.serve(webRequest(req, raw, ac.signal), agent, body);
  await writeWebResponse(res, response);
}

/**
 * Refuses (and answers) a request whose Host or Origin is not allowed (403, against DNS
 * rebinding) or whose method is not POST (405). Returns true when it answered.
 */
function refusedHostOrMethod(
  mcp: NonNullable<HttpRoutes["mcp"]>,
  req: IncomingMessage,
  res: ServerResponse,
): boolean {
  const host = hostnameOf(header(req, "host"));
  if (host === null || !mcp.allowedHosts.includes(host)) {
    req.resume();
    send(res, 403, rpcError(-32000, "Host not allowed"), true);
    return true;
  }
  const origin = header(req, "origin");
  if (origin !== undefined && !mcp.allowedHosts.includes(hostnameOf(origin) ?? "")) {
    req.resume();
    send(res, 403, rpcError(-32000, "Origin not allowed"), true);
    return true;
  }
  if (req.method !== "POST") {
    req.resume();
    res.writeHead(405, { allow: "POST", "content-type": "application/json" });
    res.end(JSON.stringify(rpcError(-32000, "Method not allowed: this endpoint is stateless, use POST")));
    return true;
  }
  return false;
}

/** The Node request as the web `Request` the MCP SDK's handler takes (body already read). */
function webRequest(req: IncomingMessage, raw: Buffer, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  return new Request(`http://${header(req, "host")}${MCP_PATH}`, {
    method: "POST",
    headers,
    body: raw,
    signal,
  });
}

/** Writes the SDK's web `Response` back: status, headers, then the body (JSON or an SSE stream). */
async function writeWebResponse(res: ServerResponse, response: Response): Promise<void> {
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    out[name] = value;
  });
  res.writeHead(response.status, out);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done || res.destroyed) break;
    res.write(value);
  }
  res.end();
}

export interface GatewayHttpServer {
  readonly server: Server;
  /** `http://host:port` as bound (port 0 resolved). */
  readonly url: string;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown, close = false): void {
  const data = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(data),
    ...(close ? { connection: "close" } : {}),
  });
  res.end(data);
}

const error = (code: string, message: string) => ({ error: { code, message } });

/**
 * One agent hook call: the bearer token (401), the body (413 over `maxBodyBytes`, 400 unless a
 * JSON object within the depth limit), then the agent's route in the agent's own trace. A refused
 * token is logged (rate-limited, never the token).
 */
async function answerHook(
  options: { routes: HttpRoutes; maxBodyBytes: number; refused: RefusedTokenLog; observer: ServiceObserver },
  req: IncomingMessage,
  res: ServerResponse,
  route: HookRoute,
  path: string,
  query: URLSearchParams,
): Promise<void> {
  const { routes, maxBodyBytes } = options;
  // A header said twice is refused, not read as one of its values (nothing is invoked).
  const repeated = repeatedHeader(req, ["authorization", TRACEPARENT_HEADER, TRACESTATE_HEADER]);
  if (repeated !== undefined) {
    req.resume();
    send(res, 400, error(ErrorCode.InvalidRequest, `the ${repeated} header is given more than once`), true);
    return;
  }
  const agent = routes.identify(req.headers.authorization);
  if (agent === null) {
    req.resume();
    options.refused.note(req.socket.remoteAddress, path, req.headers.authorization);
    send(res, 401, error(ErrorCode.PolicyDenied, "missing or unknown bearer token"), true);
    return;
  }
  const raw = await readBody(req, maxBodyBytes);
  if (raw === null) {
    send(res, 413, error(ErrorCode.InvalidRequest, `request body over ${maxBodyBytes} bytes`), true);
    return;
  }
  let body: unknown;
  try {
    // Depth is checked before parsing: nothing downstream recurses through a degenerate body.
    body = raw.length === 0 ? undefined : decodeJson(raw);
  } catch (err) {
    const message = err instanceof GeodeError ? err.message : "body is not UTF-8 JSON";
    send(res, 400, error(ErrorCode.InvalidRequest, message));
    return;
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    send(res, 400, error(ErrorCode.InvalidRequest, "body must be a JSON object"));
    return;
  }
  // Claude Code gives up after its hook timeout: stop the work it no longer waits for.
  const ac = new AbortController();
  res.once("close", () => {
    if (!res.writableEnded) ac.abort(new Error("the client closed the request"));
  });
  // The agent's trace (a `traceparent` header) goes on to every message this hook call causes.
  const trace = parseTraceparent(header(req, TRACEPARENT_HEADER), header(req, TRACESTATE_HEADER));
  const reply = await options.observer.traced(trace ?? undefined, "geode.gateway.hook", () =>
    route({ body, agent, signal: ac.signal, query }),
  );
  if (!res.destroyed) send(res, reply.status, reply.body);
}

/**
 * The gateway's HTTP front door (node:http): `GET /healthz`, and `POST` to each agent kind's hook
 * path (`/v1/claude-code/hook`, …). Every request to a hook path needs a known bearer token (401
 * otherwise, nothing invoked); a body over `maxBodyBytes` is 413, one that is not a UTF-8 JSON
 * object (or nests too deep) is 400. A client slower than `timeouts` to send its request gets 408
 * and its socket closed.
 */
export async function startHttpServer(options: {
  host: string;
  port: number;
  maxBodyBytes: number;
  timeouts: HttpTimeouts;
  routes: HttpRoutes;
  log: Logger;
  /** Each hook call's span, in the agent's trace (the gateway's `ServiceContext.observer`). */
  observer: ServiceObserver;
}): Promise<GatewayHttpServer> {
  const { routes, log } = options;
  const inflight = new Set<Promise<void>>();
  const hookOptions = { ...options, refused: new RefusedTokenLog(log) };

  const server = createServer(httpServerOptions(options.timeouts), (req, res) => {
    const url = req.url ?? "/";
    const path = url.split("?", 1)[0];
    let work: Promise<void>;
    if (path === "/healthz") {
      if (req.method !== "GET" && req.method !== "HEAD")
        work = Promise.resolve(send(res, 405, error(ErrorCode.InvalidRequest, "use GET")));
      else
        work = Promise.resolve(
          routes.healthy() ? send(res, 200, { status: "ok" }) : send(res, 503, { status: "unavailable" }),
        );
    } else if (path !== undefined && isOAuthProbe(path)) {
      req.resume();
      work = Promise.resolve(
        send(res, 404, error(ErrorCode.InvalidRequest, "no OAuth here: use the agent's token")),
      );
    } else if (routes.llm && path?.startsWith(routes.llm.prefix)) {
      work = routes.llm.serve(req, res);
    } else if (path === MCP_PATH && routes.mcp) {
      work = answerMcp(hookOptions, routes.mcp, req, res);
    } else if (path !== undefined && routes.hooks.has(path)) {
      const route = routes.hooks.get(path) as HookRoute;
      if (req.method !== "POST") {
        req.resume();
        work = Promise.resolve(send(res, 405, error(ErrorCode.InvalidRequest, "use POST")));
      } else
        work = answerHook(
          hookOptions,
          req,
          res,
          route,
          path,
          new URLSearchParams(url.slice(path.length + 1)),
        );
    } else {
      req.resume();
      work = Promise.resolve(send(res, 404, error(ErrorCode.InvalidRequest, `no route ${path}`)));
    }
    const p = work
      .catch((err: unknown) => {
        log.error({ err_type: err instanceof Error ? err.name : typeof err }, "request failed");
        if (!res.headersSent) send(res, 500, error(ErrorCode.Internal, "internal error"), true);
      })
      .finally(() => inflight.delete(p));
    inflight.add(p);
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  return {
    server,
    url: `http://${host}:${addr.port}`,
    async close() {
      // Stop taking connections, answer what is in flight, then drop idle keep-alive sockets.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
      server.closeAllConnections();
      await closed;
    },
  };
}

/** One request header as a string (never repeated: `answerHook` refuses that first). */
function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
