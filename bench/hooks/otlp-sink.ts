/**
 * The OTLP collector of `BENCH_OBSERVABILITY_ONLY=1 pnpm bench hooks`, in a process of its own as a
 * real collector would be: takes every export on 127.0.0.1:<port>, answers 200, and on SIGTERM
 * prints the bytes and requests it took.
 */
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 0);
let bytes = 0;
let requests = 0;
const server = createServer((req, res) => {
  req.on("data", (c: Buffer) => {
    bytes += c.length;
  });
  req.on("end", () => {
    requests++;
    // A full success: an empty message, in the request's encoding (protobuf or JSON).
    const type = req.headers["content-type"] ?? "application/x-protobuf";
    res.writeHead(200, { "content-type": type }).end(type.endsWith("json") ? "{}" : "");
  });
});
server.listen(port, "127.0.0.1", () => process.stdout.write("ready\n"));
process.on("SIGTERM", () => {
  process.stdout.write(`exported ${bytes} bytes in ${requests} requests\n`);
  process.exit(0);
});
