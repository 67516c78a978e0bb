/**
 * The floor of `pnpm bench mcp`: a bare forwarding MCP proxy on the same SDK the gateway uses. A
 * streamable HTTP server on loopback, stateless (`createMcpHandler` with a fresh low-level
 * `Server` per request, as `POST /v1/mcp` is served), whose `tools/list` and `tools/call` go to
 * one long-lived stdio client of the upstream named by its arguments (`peer.ts COMMAND ARGS…`).
 * The node:http → web Request → handler → response path is the gateway's, minus its checks.
 */
import { createServer, type IncomingMessage } from "node:http";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createMcpHandler, Server } from "@modelcontextprotocol/server";

const [command, ...args] = process.argv.slice(2);
if (!command) throw new Error("usage: peer.ts COMMAND [ARGS…]");
const upstream = new Client({ name: "bench-mcp-floor", version: "0.1.0" });
await upstream.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));

const handler = createMcpHandler(
  () => {
    const server = new Server({ name: "floor", version: "0.1.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/list", async () => upstream.listTools());
    server.setRequestHandler(
      "tools/call",
      async (request) =>
        (await upstream.callTool({
          name: request.params.name,
          arguments: request.params.arguments ?? {},
        })) as never,
    );
    return server;
  },
  { legacy: "stateless" },
);

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const http = createServer((req, res) => {
  void (async () => {
    const raw = await readBody(req);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
    const hasBody = req.method === "POST";
    const request = new Request(`http://${req.headers.host ?? "127.0.0.1"}${req.url ?? "/"}`, {
      method: req.method ?? "GET",
      headers,
      ...(hasBody ? { body: raw } : {}),
    });
    const response = await handler.fetch(
      request,
      hasBody && raw.length > 0 ? { parsedBody: JSON.parse(raw.toString("utf8")) } : {},
    );
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
  })().catch((err: unknown) => {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(err));
  });
});
http.keepAliveTimeout = 60_000;
http.listen(0, "127.0.0.1", () => {
  const address = http.address();
  const port = typeof address === "object" && address ? address.port : 0;
  process.stdout.write(`listening on http://127.0.0.1:${port}\n`);
});
const stop = () => {
  http.close();
  void upstream.close().finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
