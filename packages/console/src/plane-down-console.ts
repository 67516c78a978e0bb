import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ErrorCode } from "@geode/contracts";
import { httpServerOptions } from "@geode/service";
import { DEFAULT_CONSOLE_TIMEOUTS } from "./console-config.js";
import { ApiError, sendError } from "./http-io.js";

/** A console that has no plane to show yet: it says what is down and how to start it. */
export interface PlaneDownConsole {
  url: string;
  port: number;
  /** Frees the port (for the real console to take it). */
  close(): Promise<void>;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * Serves, on the console's address, only what is down: the page is one paragraph saying it (and
 * reloads itself), every `/api/` route is a 503 `unavailable` with the same sentence. Nothing of
 * the plane is served, so no token is asked.
 */
export async function startPlaneDownConsole(options: {
  port: number;
  host: string;
  /** One sentence: which part is down and how to start it. */
  message: string;
}): Promise<PlaneDownConsole> {
  const page = Buffer.from(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">` +
      `<title>GEODE console: plane down</title></head><body><h1>GEODE console</h1>` +
      `<p id="plane-down" role="alert">${escapeHtml(options.message)}</p>` +
      `<p>This page reloads by itself until the plane answers.</p></body></html>`,
  );
  const server: Server = createServer(httpServerOptions(DEFAULT_CONSOLE_TIMEOUTS), (req, res) => {
    const pathname = new URL(req.url ?? "/", "http://console.invalid").pathname;
    if (pathname.startsWith("/api/")) {
      sendError(res, new ApiError(503, ErrorCode.Unavailable, options.message));
      return;
    }
    res.writeHead(503, {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
      "x-content-type-options": "nosniff",
      "cache-control": "no-store",
      "retry-after": "5",
      "content-length": page.length,
    });
    res.end(req.method === "HEAD" ? undefined : page);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${options.host === "0.0.0.0" ? "127.0.0.1" : options.host}:${port}`,
    port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
