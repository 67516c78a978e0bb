import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ServiceMetrics } from "./metrics.js";

/** A listening `/metrics` endpoint. */
export interface MetricsServer {
  /** `http://127.0.0.1:{port}/metrics`: what the health reply's `metrics_url` says. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Serves the registry's Prometheus text on `GET /metrics` at `host:port` (loopback by default;
 * port 0 picks a free one). Anything else is 404. Rejects when the port cannot be bound.
 */
export async function serveMetrics(
  metrics: ServiceMetrics,
  port: number,
  host = "127.0.0.1",
): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
      (err: unknown) =>
        res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // A scrape must never keep the process alive on its own.
  server.unref();
  const bound = (server.address() as AddressInfo).port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
