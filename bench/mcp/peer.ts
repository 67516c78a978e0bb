/**
 * The floors of `pnpm bench mcp`, on the same SDK the gateway uses; `peer.ts ROLE [ARGS…]`:
 * - `proxy COMMAND ARGS…`: a bare forwarding MCP proxy. A streamable HTTP server on loopback,
 *   stateless (`createMcpHandler` with a fresh low-level `Server` per request, as `POST /v1/mcp`
 *   is served), whose `tools/list` and `tools/call` go to one long-lived stdio client of the
 *   upstream `COMMAND ARGS…`. The node:http → web Request → handler → response path is the
 *   gateway's, without its checks.
 * - the plane's processes with its own work taken out, each passing JSON on over NATS as the
 *   plane's does (`{ns}.chain.{role}`): `chain-http` (the gateway: the same HTTP server as `proxy`,
 *   each request to `chain-executor`), `chain-executor` (asks `chain-dispatcher` before and after,
 *   `chain-terminal` between), `chain-dispatcher` (before: asks `chain-guard`; after: answers at
 *   once), `chain-guard` (answers at once), `chain-terminal COMMAND ARGS…` (the bridge: one stdio
 *   client of the upstream).
 */
import { createServer, type IncomingMessage } from "node:http";
import { connectGeode } from "@geode/bus";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createMcpHandler, Server } from "@modelcontextprotocol/server";

type Forward = (method: "tools/list" | "tools/call", params: Record<string, unknown>) => Promise<unknown>;

const [role, ...rest] = process.argv.slice(2);
const stops: Array<() => Promise<unknown> | undefined> = [];

async function upstreamOf(command: string | undefined, args: string[]): Promise<Forward> {
  if (!command) throw new Error(`usage: peer.ts ${role} COMMAND [ARGS…]`);
  const upstream = new Client({ name: "bench-mcp-floor", version: "0.1.0" });
  await upstream.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));
  stops.push(() => upstream.close());
  return (method, params) =>
    method === "tools/list"
      ? upstream.listTools()
      : upstream.callTool({
          name: String(params["name"]),
          arguments: (params["arguments"] ?? {}) as Record<string, unknown>,
        });
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** A stateless streamable HTTP MCP server on loopback whose tools requests go to `forward`. */
function serveMcp(forward: Forward): void {
  const handler = createMcpHandler(
    () => {
      const server = new Server({ name: "floor", version: "0.1.0" }, { capabilities: { tools: {} } });
      server.setRequestHandler("tools/list", async () => (await forward("tools/list", {})) as never);
      server.setRequestHandler(
        "tools/call",
        async (request) =>
          (await forward("tools/call", {
            name: request.params.name,
            arguments: request.params.arguments ?? {},
          })) as never,
      );
      return server;
    },
    { legacy: "stateless" },
  );
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
  stops.unshift(() => new Promise((resolve) => http.close(resolve)));
}

if (role === "proxy") {
  serveMcp(await upstreamOf(rest[0], rest.slice(1)));
} else if (role?.startsWith("chain-")) {
  const conn = await connectGeode({ name: `bench-mcp-${role}` });
  stops.push(() => conn.close());
  const subject = (r: string) => `${conn.names.ns}.chain.${r}`;
  const enc = new TextEncoder();
  const ask = async (r: string, body: unknown) =>
    (
      await conn.nc.request(subject(r), enc.encode(JSON.stringify(body)), { timeout: 60_000 })
    ).json<unknown>();
  /** Answers `{ns}.chain.{role}` with what `answer` makes of each request's JSON body. */
  const serve = (answer: (body: Record<string, unknown>) => Promise<unknown>) => {
    conn.nc.subscribe(subject(role.slice("chain-".length)), {
      callback: (_e, m) => {
        void answer(m.json<Record<string, unknown>>()).then(
          (out) => m.respond(enc.encode(JSON.stringify(out))),
          (err: unknown) => m.respond(enc.encode(JSON.stringify({ error: String(err) }))),
        );
      },
    });
  };
  if (role === "chain-http") serveMcp((method, params) => ask("executor", { method, params }));
  else if (role === "chain-executor")
    serve(async (body) => {
      if (body["method"] !== "tools/call") return ask("terminal", body);
      await ask("dispatcher", { hook: "pre", params: body["params"] });
      const result = await ask("terminal", body);
      await ask("dispatcher", { hook: "post", params: body["params"], result });
      return result;
    });
  else if (role === "chain-dispatcher")
    serve(async (body) => (body["hook"] === "pre" ? ask("guard", body) : {}));
  else if (role === "chain-guard") serve(async () => ({}));
  else if (role === "chain-terminal") {
    const forward = await upstreamOf(rest[0], rest.slice(1));
    serve((body) =>
      forward(body["method"] as "tools/list", (body["params"] ?? {}) as Record<string, unknown>),
    );
  } else throw new Error(`unknown role ${role}`);
  await conn.nc.flush();
  if (role !== "chain-http") process.stdout.write("ready\n");
} else
  throw new Error(
    "usage: peer.ts proxy|chain-http|chain-executor|chain-dispatcher|chain-guard|chain-terminal …",
  );

const stop = () => {
  void (async () => {
    for (const s of stops) await s()?.catch(() => undefined);
    process.exit(0);
  })();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
