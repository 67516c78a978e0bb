/**
 * A benchmark peer process. `endpoint`: the trivial HTTP endpoint (the floor): it reads the hook
 * input, parses it and answers `{}`, as a hook server with nothing to decide would. `handler`: an
 * SDK PreToolUse handler that answers `continue`.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { connectGeode, HookName, serveHook } from "@geode/sdk";

const mode = process.argv[2];
let close: () => Promise<void>;
if (mode === "endpoint") {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const body = "{}";
      res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
  close = () => new Promise<void>((r) => server.close(() => r()));
} else {
  const conn = await connectGeode({ name: "bench-gateway-handler" });
  const served = await serveHook(conn, HookName.PreToolUse, { name: "bench-guard" }, () => ({
    action: "continue",
  }));
  await conn.nc.flush();
  process.stdout.write("ready\n");
  close = async () => {
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
