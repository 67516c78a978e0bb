/**
 * The replay under measurement, as its own process: `geode replay --rebuild` exactly as an
 * operator runs it, printing `mem {rss,heapUsed,external,arrayBuffers}` (bytes) to stdout every
 * `BENCH_SAMPLE_MS` (default 500 ms) and `done <exit code>` at the end.
 */
import { runCli } from "@geode/cli";

const every = Number(process.env["BENCH_SAMPLE_MS"] ?? 500);
const sample = () => {
  const m = process.memoryUsage();
  process.stdout.write(
    `mem ${JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers })}\n`,
  );
};
sample();
const timer = setInterval(sample, every);
let err = "";
const code = await runCli(["replay", "--rebuild"], {
  out: () => undefined,
  err: (t) => {
    err += t;
  },
  env: process.env,
  isTTY: false,
});
clearInterval(timer);
sample();
if (code !== 0) process.stderr.write(err);
process.stdout.write(`done ${code}\n`);
process.exit(code);
