/**
 * `pnpm bench [name…]` runs the benchmarks under bench/<name>/main.ts one after another (all but
 * the opt-in ones when no name is given), each in its own process, and prints their tables.
 * `pnpm bench --compare REF [name…] [--turns N] [--keep]`: the same on REF and on the working tree,
 * taking turns, and a before/after table of their figures (bench/compare.ts).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const here = import.meta.dirname;
/**
 * Run only when named: replay-memory publishes and replays 1,000,000 events, audit publishes
 * 1,000,000 messages and recomputes their tree three times (minutes each).
 */
const OPT_IN = new Set(["replay-memory", "audit"]);
if (process.argv.slice(2).some((a) => a === "--compare" || a.startsWith("--compare="))) {
  const { compare } = await import("./compare.js");
  process.exit(await compare(process.argv.slice(2), path.resolve(here, ".."), OPT_IN));
}
const all = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(path.join(here, d.name, "main.ts")))
  .map((d) => d.name)
  .sort();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !all.includes(w));
if (unknown.length > 0) {
  process.stderr.write(`unknown benchmark: ${unknown.join(", ")} (have: ${all.join(", ")})\n`);
  process.exit(2);
}
const require = createRequire(import.meta.url);
// The benchmarks start services and the `geode` bin compiled, as production runs them: build first
// (incremental, a few seconds when nothing changed).
const build = spawnSync(
  process.execPath,
  [require.resolve("typescript/bin/tsc"), "-b", "tsconfig.build.json"],
  {
    cwd: path.resolve(here, ".."),
    stdio: "inherit",
  },
);
if (build.status !== 0) process.exit(1);
// tsx as a loader in the benchmark's own process (its CLI would run the script in a second one).
const tsx = require.resolve("tsx");
// BENCH_CPU_PROF=<dir>: each process writes a V8 CPU profile there (see bench/lib/cpu-profile.ts).
const profile = process.env["BENCH_CPU_PROF"]
  ? ["--cpu-prof", `--cpu-prof-dir=${path.resolve(process.env["BENCH_CPU_PROF"])}`]
  : [];
let failed = 0;
for (const name of wanted.length > 0 ? wanted : all.filter((b) => !OPT_IN.has(b))) {
  process.stdout.write(`\n## bench/${name}\n\n`);
  const r = spawnSync(
    process.execPath,
    [...profile, "--import", tsx, "--conditions=geode-source", path.join(here, name, "main.ts")],
    { stdio: "inherit", env: process.env },
  );
  if (r.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
