/**
 * Packs every publishable package (`packages/*` without `"private": true`) into npm tarballs, as
 * `npm publish` would upload them: compiled JavaScript with type declarations, `workspace:*`
 * replaced by the real versions. Run `pnpm build` first (the test suite's set-up does).
 *
 *   pnpm pack:packages [dir]      # default .geode/packages; prints one row per tarball
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");

interface PackedPackage {
  name: string;
  version: string;
  /** Absolute path of the tarball. */
  file: string;
  bytes: number;
}

/** The publishable packages (any order: npm resolves them among the tarballs). */
function publishablePackages(): string[] {
  const dir = path.join(ROOT, "packages");
  return readdirSync(dir)
    .map((d) => path.join(dir, d))
    .filter((d) => {
      const file = path.join(d, "package.json");
      return (
        existsSync(file) && (JSON.parse(readFileSync(file, "utf8")) as { private?: boolean }).private !== true
      );
    });
}

/** Packs each publishable package into `dest` (created when missing) and says what it wrote. */
export function packPackages(dest: string): PackedPackage[] {
  mkdirSync(dest, { recursive: true });
  const packages = publishablePackages().map((dir) => {
    const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as {
      name: string;
      version: string;
    };
    if (!existsSync(path.join(dir, "dist/index.js")))
      throw new Error(`${pkg.name} is not built (no dist/index.js): run \`pnpm build\` first`);
    return pkg;
  });
  // One pnpm for all of them (pnpm's start-up dominates on a busy machine).
  const filters = packages.flatMap((p) => ["--filter", p.name]);
  const r = spawnSync("pnpm", ["-r", ...filters, "pack", "--pack-destination", dest], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`pnpm pack failed:\n${r.stdout}${r.stderr}`);
  return packages.map((pkg) => {
    const file = path.join(dest, `${pkg.name.replace(/^@/, "").replace("/", "-")}-${pkg.version}.tgz`);
    return { name: pkg.name, version: pkg.version, file, bytes: statSync(file).size };
  });
}

if (process.argv[1] === import.meta.filename) {
  const dest = path.resolve(process.argv[2] ?? path.join(ROOT, ".geode/packages"));
  const packed = packPackages(dest);
  const width = Math.max(...packed.map((p) => p.name.length));
  process.stdout.write(`packed ${packed.length} packages into ${dest}\n\n`);
  for (const p of packed)
    process.stdout.write(
      `  ${p.name.padEnd(width)}  ${p.version}  ${(p.bytes / 1024).toFixed(1).padStart(7)} KiB  ${path.basename(p.file)}\n`,
    );
  process.stdout.write(`\ninstall them elsewhere with: npm install ${dest}/*.tgz\n`);
}
