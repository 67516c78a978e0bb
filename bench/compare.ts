/**
 * `pnpm bench --compare REF [name…] [--turns N] [--keep]`: the chosen benchmarks on REF and on
 * the working tree, taking turns in one sitting (before, after; then after, before; …), and a
 * before/after table of every figure they print, each side's median and spread (lowest–highest
 * turn), flagged when the change is larger than the spread. REF is a commit (checked out as a git
 * worktree under .geode/bench-ref/<commit>, installed offline and built, or one already there
 * reused; removed at the end unless `--keep`) or the path of a checkout already installed and
 * built (left as it is).
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { compareTurns, comparisonTable, type Figure, parseFigures } from "./lib/compare.js";
import { fmtLoad, progress } from "./lib/stats.js";

interface Options {
  ref: string;
  names: string[];
  turns: number;
  keep: boolean;
}

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: pnpm bench --compare REF [name…] [--turns N] [--keep]\n`);
  process.exit(2);
}

function parseArgs(argv: string[]): Options {
  const rest = [...argv];
  let ref: string | undefined;
  let turns = 3;
  let keep = false;
  const names: string[] = [];
  while (rest.length > 0) {
    const a = rest.shift()!;
    if (a === "--compare") ref = rest.shift() ?? usage("--compare needs a REF");
    else if (a.startsWith("--compare=")) ref = a.slice("--compare=".length);
    else if (a === "--turns" || a.startsWith("--turns=")) {
      const v = a === "--turns" ? rest.shift() : a.slice("--turns=".length);
      turns = Number(v);
      if (!Number.isInteger(turns) || turns < 1) usage(`--turns needs a whole number ≥ 1 (got ${v})`);
    } else if (a === "--keep") keep = true;
    else if (a.startsWith("-")) usage(`unknown option: ${a}`);
    else names.push(a);
  }
  if (!ref) usage("--compare needs a REF");
  return { ref, names, turns, keep };
}

function git(cwd: string, args: string[]): string {
  const r = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

function run(cwd: string, cmd: string, args: string[]): void {
  progress(`${path.relative(process.cwd(), cwd) || "."}: ${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { cwd, stdio: ["ignore", process.stderr, "inherit"] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} in ${cwd} failed (${r.status ?? r.signal})`);
}

const benchesOf = (root: string) =>
  readdirSync(path.join(root, "bench"), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(root, "bench", d.name, "main.ts")))
    .map((d) => d.name)
    .sort();

/** Runs one benchmark of one tree to its end; resolves its standard output. */
function runBench(root: string, name: string, tag: string): Promise<{ ok: boolean; stdout: string }> {
  const require = createRequire(path.join(root, "package.json"));
  const tsx = require.resolve("tsx");
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ["--import", tsx, "--conditions=geode-source", path.join(root, "bench", name, "main.ts")],
      { cwd: root, env: process.env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    let partial = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      const lines = (partial + d).split("\n");
      partial = lines.pop()!;
      for (const l of lines) process.stderr.write(`  [${tag}] ${l}\n`);
    });
    child.on("close", (code) => {
      if (partial) process.stderr.write(`  [${tag}] ${partial}\n`);
      resolve({ ok: code === 0, stdout });
    });
  });
}

/**
 * The checkout REF names: a path as it is, or a commit's worktree under .geode/bench-ref/ (`managed`:
 * one of those, removed at the end unless kept, whether this run made it or found it there).
 */
function prepareRef(root: string, ref: string): { dir: string; label: string; managed: boolean } {
  const asPath = path.resolve(ref);
  if (existsSync(asPath) && statSync(asPath).isDirectory()) {
    if (!existsSync(path.join(asPath, "node_modules")))
      throw new Error(`${ref}: a checkout with no node_modules (run pnpm install and pnpm build there)`);
    return { dir: asPath, label: ref, managed: false };
  }
  const sha = git(root, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]);
  const dir = path.join(root, ".geode", "bench-ref", sha);
  const label = `${ref} (${sha.slice(0, 10)})`;
  // Written once installed and built: a worktree left half made (a run stopped) is made again.
  const ready = path.join(dir, ".geode", "bench-ref-ready");
  if (existsSync(ready)) {
    progress(`reusing ${path.relative(root, dir)}`);
    return { dir, label, managed: true };
  }
  if (existsSync(dir)) {
    rmSync(dir, { recursive: true, force: true });
    git(root, ["worktree", "prune"]);
  }
  git(root, ["worktree", "add", "--detach", dir, sha]);
  try {
    run(dir, "pnpm", ["install", "--frozen-lockfile", "--offline"]);
    run(dir, "pnpm", ["build"]);
    mkdirSync(path.dirname(ready), { recursive: true });
    writeFileSync(ready, `${sha}\n`);
  } catch (err) {
    git(root, ["worktree", "remove", "--force", dir]);
    throw err;
  }
  return { dir, label, managed: true };
}

/** The compiled services and bin each tree's benchmarks start: built as `pnpm bench` does. */
function build(root: string): void {
  const require = createRequire(path.join(root, "package.json"));
  run(root, process.execPath, [require.resolve("typescript/bin/tsc"), "-b", "tsconfig.build.json"]);
}

export async function compare(argv: string[], root: string, optIn: ReadonlySet<string>): Promise<number> {
  const opts = parseArgs(argv);
  const here = benchesOf(root);
  const names = opts.names.length > 0 ? opts.names : here.filter((b) => !optIn.has(b));
  const unknown = names.filter((n) => !here.includes(n));
  if (unknown.length > 0) usage(`unknown benchmark: ${unknown.join(", ")} (have: ${here.join(", ")})`);

  let ref: { dir: string; label: string; managed: boolean };
  try {
    ref = prepareRef(root, opts.ref);
  } catch (err) {
    process.stderr.write(`bench --compare: ${(err as Error).message}\n`);
    return 1;
  }
  let failed = 0;
  try {
    const missing = names.filter((n) => !existsSync(path.join(ref.dir, "bench", n, "main.ts")));
    if (missing.length > 0) throw new Error(`${ref.label} has no benchmark ${missing.join(", ")}`);
    build(ref.dir);
    if (ref.dir !== root) build(root);
    const dirty = git(root, ["status", "--porcelain"]) !== "";
    const afterLabel = `working tree (${git(root, ["rev-parse", "--short=10", "HEAD"])}${dirty ? " + changes" : ""})`;
    const sides = [
      { tag: "before", dir: ref.dir },
      { tag: "after", dir: root },
    ];
    for (const name of names) {
      const figures: Record<string, Figure[][]> = { before: [], after: [] };
      const loadStart = fmtLoad();
      const started = Date.now();
      let ok = true;
      for (let turn = 0; turn < opts.turns && ok; turn++) {
        // Before then after, then after then before: drift of the machine during a turn pair
        // falls on both sides alike.
        for (const s of turn % 2 === 0 ? sides : [...sides].reverse()) {
          progress(`${name}: turn ${turn + 1} of ${opts.turns}, ${s.tag}`);
          const r = await runBench(s.dir, name, `${name} ${s.tag} ${turn + 1}/${opts.turns}`);
          if (!r.ok) {
            process.stderr.write(`bench --compare: ${name} failed on the ${s.tag} side\n`);
            ok = false;
            break;
          }
          figures[s.tag]!.push(parseFigures(r.stdout));
        }
      }
      if (!ok) {
        failed++;
        continue;
      }
      const rows = compareTurns(figures["before"]!, figures["after"]!);
      const minutes = ((Date.now() - started) / 60_000).toFixed(1);
      process.stdout.write(
        `\n## bench/${name}: before ${ref.label}, after ${afterLabel}\n\n` +
          `${comparisonTable(rows)}\n\n` +
          `${opts.turns === 1 ? "1 turn each (no spread: nothing flagged)" : `${opts.turns} turns each, taking turns`}; ${minutes} min; load average ${loadStart} at the start, ${fmtLoad()} at the end; ` +
          `${rows.filter((r) => r.flagged).length} of ${rows.length} figures changed by more than their spread\n`,
      );
    }
  } catch (err) {
    process.stderr.write(`bench --compare: ${(err as Error).message}\n`);
    failed++;
  } finally {
    if (ref.managed && !opts.keep) {
      progress(`removing ${path.relative(root, ref.dir)}`);
      git(root, ["worktree", "remove", "--force", ref.dir]);
    } else if (ref.managed) progress(`kept ${path.relative(root, ref.dir)}`);
  }
  return failed > 0 ? 1 : 0;
}
