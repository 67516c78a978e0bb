/**
 * A benchmark peer process. `endpoint`: the trivial HTTP endpoint (the floor): it reads the hook
 * input, parses it and answers `{}`, as a hook server with nothing to decide would. `handler`: an
 * SDK PreToolUse handler that answers `continue`, and a raw NATS responder on `{ns}.bench.echo`.
 * `forward`: the gateway's floor: an HTTP endpoint that reads and parses the hook input, makes one
 * raw NATS request to that responder and answers with its reply (HTTP in, NATS out, nothing else).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { connectGeode, HookName, serveHook } from "@geode/sdk";

/** Serves `handle` over HTTP on loopback, printing its address; returns its close. */
async function serve(handle: (body: Buffer) => Promise<string> | string): Promise<() => Promise<void>> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const body = await handle(Buffer.concat(chunks));
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
        res.end(body);
      })();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
  return () => new Promise<void>((r) => server.close(() => r()));
}

const mode = process.argv[2];
let close: () => Promise<void>;
if (mode === "endpoint") {
  close = await serve((body) => {
    JSON.parse(body.toString("utf8"));
    return "{}";
  });
} else if (mode === "forward") {
  const conn = await connectGeode({ name: "bench-gateway-forward" });
  const subject = `${conn.names.ns}.bench.echo`;
  const closeServer = await serve(async (body) => {
    const input = JSON.parse(body.toString("utf8")) as unknown;
    const reply = await conn.nc.request(subject, new TextEncoder().encode(JSON.stringify(input)), {
      timeout: 5_000,
    });
    return reply.string();
  });
  close = async () => {
    await closeServer();
    await conn.close();
  };
} else {
  const conn = await connectGeode({ name: "bench-gateway-handler" });
  const served = await serveHook(conn, HookName.PreToolUse, { name: "bench-guard" }, () => ({
    action: "continue",
  }));
  const echo = conn.nc.subscribe(`${conn.names.ns}.bench.echo`, {
    callback: (_e, m) => {
      m.respond(m.data);
    },
  });
  await conn.nc.flush();
  process.stdout.write("ready\n");
  close = async () => {
    echo.unsubscribe();
    await served.close();
    await conn.close();
  };
}
const stop = async () => {
  await close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
