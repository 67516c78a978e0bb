import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type GeodeConnection, type Logger, RuntimeEventBus, repeatedHeader, silentLogger } from "@geode/bus";
import {
  type ConsoleLoginReply,
  ConsoleLoginRequestSchema,
  type ConsoleLogoutReply,
  type ConsoleMe,
} from "@geode/contracts";
import { createVerifyClient } from "@geode/runtime";
import { type HttpTimeouts, httpServerOptions } from "@geode/service";
import {
  AttemptStore,
  HandlerRegistrations,
  ReceiptStore,
  RunStore,
  SessionStore,
  WebhookStore,
} from "@geode/state";
import { ROUTES } from "./console-api.js";
import { ConsoleAuth } from "./console-auth.js";
import { DEFAULT_CONSOLE_TIMEOUTS } from "./console-config.js";
import type { ConsoleDeps } from "./console-route.js";
import { ApiError, badRequest, readBody, sendError, sendJson, toApiError } from "./http-io.js";
import { followNats } from "./nats-state.js";
import { PendingApprovals } from "./pending-approvals.js";
import { lazyPolicyStore } from "./policy-routes.js";
import type { ConsoleProjection } from "./session-list.js";

/** Default port of `geode console` (docs/console.md). */
export const DEFAULT_CONSOLE_PORT = 4281;

/** The built page (`pnpm --filter @geode/console build`). */
export const WEB_DIST = fileURLToPath(new URL("../dist/web", import.meta.url));

export interface ConsoleOptions {
  conn: GeodeConnection;
  /** `GEODE_CONSOLE_TOKEN`. */
  token: string;
  /** Default 4281; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1 (loopback only). */
  host?: string;
  /** How long the tool-executor waits for an approval (`GEODE_APPROVAL_TIMEOUT_MS`). */
  approvalTimeoutMs?: number;
  log?: Logger;
  /** The built page; default WEB_DIST. */
  webDir?: string;
  /** How long a client may take to send a request (408 after), and stay idle between requests. */
  timeouts?: HttpTimeouts;
  /**
   * The Postgres projection of the namespace (`openProjectionDb`'s `db` and `ns`), which the
   * session views read; without it those routes answer 503. The caller opens and closes it.
   */
  projection?: ConsoleProjection;
  /** Without `projection`: why there is none and how to get one, for its routes' 503s. */
  noProjection?: string;
}

export interface RunningConsole {
  url: string;
  port: number;
  close(): Promise<void>;
}

const PAGE_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

const TYPES: ReadonlyMap<string, string> = new Map([
  [".html", "text/html; charset=utf-8"],
  [".js", "text/javascript; charset=utf-8"],
  [".css", "text/css; charset=utf-8"],
  [".svg", "image/svg+xml"],
  [".ico", "image/x-icon"],
]);

/** Requests must name the console by a loopback name (no DNS-rebound host reaches the API). */
const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i;

/**
 * Starts the operator console: the page (static, built by Vite) and the JSON API under `/api/`,
 * every API route behind `GEODE_CONSOLE_TOKEN`. The console is also an approver on
 * `{ns}.approval.request` while it runs.
 */
export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  const { conn } = options;
  const log = options.log ?? silentLogger();
  const auth = new ConsoleAuth(options.token);
  const events = await RuntimeEventBus.create({ nc: conn, names: conn.names, source: "console", log });
  const deps = await openDeps(options, events, log);
  const nats = followNats(conn.nc);
  const webDir = options.webDir ?? WEB_DIST;
  const server = createServer(httpServerOptions(options.timeouts ?? DEFAULT_CONSOLE_TIMEOUTS), (req, res) => {
    void handle(req, res).catch((err) => {
      log.error({ err }, "console request failed");
      if (!res.headersSent) sendError(res, toApiError(err));
      else res.end();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://console.invalid");
    if (!LOOPBACK_HOST.test(req.headers.host ?? "")) {
      sendError(res, new ApiError(421, "invalid_request", "the console answers only loopback host names"));
      return;
    }
    if (!url.pathname.startsWith("/api/")) return serveStatic(webDir, url.pathname, req, res);
    try {
      if (url.pathname === "/api/login" && req.method === "POST") return await login(req, res);
      const repeated = repeatedHeader(req, ["authorization"]);
      if (repeated !== undefined) throw badRequest(`the ${repeated} header is given more than once`);
      const caller = auth.caller(req);
      if (!caller) throw new ApiError(401, "policy_denied", "a valid console token is required");
      if (url.pathname === "/api/logout" && req.method === "POST") {
        auth.closeSession(req);
        const out: ConsoleLogoutReply = { signed_out: true };
        return sendJson(res, 200, out, { "set-cookie": ConsoleAuth.cookie(null) });
      }
      const natsDown = nats.down();
      if (natsDown) throw new ApiError(503, "unavailable", natsDown);
      if (url.pathname === "/api/me" && req.method === "GET")
        return sendJson(res, 200, { operator: caller.operator, via: caller.via } satisfies ConsoleMe);
      for (const route of ROUTES) {
        const m = route.pattern.exec(url.pathname);
        if (!m) continue;
        if (req.method !== route.method)
          throw new ApiError(405, "invalid_request", `${url.pathname} takes ${route.method}`);
        return await route.handle(deps, { req, res, url, caller, params: m.slice(1) });
      }
      throw new ApiError(404, "invalid_request", `no API route ${url.pathname}`);
    } catch (err) {
      const e = toApiError(err);
      if (e.code === "internal") log.error({ err, path: url.pathname }, "console API error");
      if (!res.headersSent) sendError(res, e);
      else res.end();
    }
  }

  async function login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { token, operator } = await readBody(req, ConsoleLoginRequestSchema);
    if (!auth.matches(token)) throw new ApiError(401, "policy_denied", "that is not the console token");
    const id = auth.openSession(operator);
    log.info({ operator }, "operator signed in");
    const out: ConsoleLoginReply = { operator };
    sendJson(res, 200, out, { "set-cookie": ConsoleAuth.cookie(id) });
  }

  const port = options.port ?? DEFAULT_CONSOLE_PORT;
  const host = options.host ?? "127.0.0.1";
  const bound = await listen(server, port, host);
  log.info({ port: bound, host }, "console listening");
  return {
    url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${bound}`,
    port: bound,
    async close() {
      await closeServer(server);
      await deps.approvals.close();
      await events.flush();
    },
  };
}

/** Listens on host:port; the port bound (the one asked, or the OS's choice for 0). */
async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** What the API routes read and write: the stores, clients and streams of the plane. */
async function openDeps(options: ConsoleOptions, events: RuntimeEventBus, log: Logger): Promise<ConsoleDeps> {
  const { conn } = options;
  const sessions = await SessionStore.open(conn);
  return {
    conn,
    events,
    approvals: new PendingApprovals(conn, {
      timeoutMs: options.approvalTimeoutMs ?? 60_000,
      agentOf: async (id) => {
        const s = await sessions.get(id);
        return { agent: s?.agent ?? null, agent_kind: s?.agent_kind ?? null };
      },
    }),
    receipts: await ReceiptStore.open(conn),
    attempts: await AttemptStore.open(conn),
    runs: await RunStore.open(conn),
    sessions,
    handlers: await HandlerRegistrations.open(conn),
    webhooks: await WebhookStore.open(conn),
    verify: createVerifyClient(conn),
    policies: lazyPolicyStore(conn),
    projection: options.projection ?? null,
    noProjection: options.noProjection ?? "the console has no projection to read: start it with DATABASE_URL",
    log,
    maxStreams: 32,
  };
}

async function serveStatic(
  webDir: string,
  pathname: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    sendError(res, new ApiError(405, "invalid_request", "the page takes GET"));
    return;
  }
  const rel = pathname === "/" ? "index.html" : pathname.slice(1);
  const file = path.resolve(webDir, rel);
  if (!file.startsWith(path.resolve(webDir) + path.sep) || !/^[A-Za-z0-9_./-]+$/.test(rel)) {
    sendError(res, new ApiError(404, "invalid_request", "not found"));
    return;
  }
  let data: Buffer;
  try {
    data = await readFile(file);
  } catch {
    if (rel === "index.html") {
      sendError(
        res,
        new ApiError(503, "unavailable", "the page is not built: run pnpm --filter @geode/console build"),
      );
    } else sendError(res, new ApiError(404, "invalid_request", "not found"));
    return;
  }
  res.writeHead(200, {
    ...PAGE_HEADERS,
    "content-type": TYPES.get(path.extname(file)) ?? "application/octet-stream",
    "cache-control": rel.startsWith("assets/") ? "public, max-age=31536000, immutable" : "no-cache",
    "content-length": data.length,
  });
  res.end(req.method === "HEAD" ? undefined : data);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
