/**
 * The floor of `pnpm bench llm`: a bare HTTP proxy in its own process that only forwards the call
 * to `BENCH_UPSTREAM` (a keep-alive agent) and pipes the answer back, no token, budget, usage or
 * events: the gateway's path with the gateway's own work removed.
 */
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { pipeline } from "node:stream";

const upstream = new URL(process.env["BENCH_UPSTREAM"] ?? "http://127.0.0.1:1");
const agent = new Agent({ keepAlive: true });
const server = createServer((req, res) => {
  const out = request(
    {
      host: upstream.hostname,
      port: upstream.port,
      path: req.url,
      method: req.method,
      agent,
      headers: { "content-type": "application/json", "content-length": req.headers["content-length"] ?? "0" },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, { "content-type": answer.headers["content-type"] ?? "" });
      res.flushHeaders();
      pipeline(answer, res, () => undefined);
    },
  );
  out.on("error", () => res.destroy());
  pipeline(req, out, () => undefined);
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
