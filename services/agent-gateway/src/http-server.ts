import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJson, type HttpTimeouts, httpServerOptions, type Logger } from "@geode/bus";
import {
  ErrorCode,
  GeodeError,
  parseTraceparent,
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
} from "@geode/contracts";
import { newTraceContext, runInTrace, withSpan } from "@geode/telemetry";

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

/** Reads a body of at most `limit` bytes; null when it is larger (the rest is drained, not kept). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      resolve(null);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        resolve(null);
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (!over) resolve(Buffer.concat(chunks, size));
    });
    req.on("error", reject);
  });
}

/**
 * One agent hook call: the bearer token (401), the body (413 over `maxBodyBytes`, 400 unless a
 * JSON object within the depth limit), then the agent's route in the agent's own trace.
 */
async function answerHook(
  options: { routes: HttpRoutes; maxBodyBytes: number },
  req: IncomingMessage,
  res: ServerResponse,
  route: HookRoute,
  query: URLSearchParams,
): Promise<void> {
  const { routes, maxBodyBytes } = options;
  const agent = routes.identify(req.headers.authorization);
  if (agent === null) {
    req.resume();
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
  const trace =
    parseTraceparent(header(req, TRACEPARENT_HEADER), header(req, TRACESTATE_HEADER)) ?? newTraceContext();
  const reply = await runInTrace(trace, () =>
    withSpan("geode.gateway.hook", {}, () => route({ body, agent, signal: ac.signal, query })),
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
}): Promise<GatewayHttpServer> {
  const { routes, log } = options;
  const inflight = new Set<Promise<void>>();

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
    } else if (path !== undefined && routes.hooks.has(path)) {
      const route = routes.hooks.get(path) as HookRoute;
      if (req.method !== "POST") {
        req.resume();
        work = Promise.resolve(send(res, 405, error(ErrorCode.InvalidRequest, "use POST")));
      } else work = answerHook(options, req, res, route, new URLSearchParams(url.slice(path.length + 1)));
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

/** One request header as a string (the first, when sent twice). */
function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
