/**
 * The base images of the Dockerfile and docker-compose.yml (`node:20-slim`, `nats:2.9-alpine`,
 * `postgres:15-alpine`), pulled where a registry answers and otherwise built here, as local
 * stand-ins tagged with the same names so both files use them unchanged (docs/deploy.md, "Without
 * an image registry"):
 *
 * - a Debian bookworm root file system made by `debootstrap --variant=minbase` from the mirror apt
 *   is configured with, imported as `geode-local/bookworm:minbase`;
 * - `node:20-slim`: that plus this machine's Node 20 binary, npm and corepack, laid out as the
 *   official image lays them out (`local-bases/node.Dockerfile`);
 * - `nats:2.9-alpine` and `postgres:15-alpine`: that plus Debian's nats-server and PostgreSQL 15
 *   (`local-bases/*.Dockerfile`).
 *
 * Each stand-in carries the label `org.geode.local-base`: a digest of everything it is built from
 * (its recipe, the Node binary, the mirror). It is rebuilt only when that digest changes, so a
 * second run on the same machine builds nothing. Run by the container tests, or by hand:
 *
 *   pnpm exec tsx infra/docker/local-bases.ts      (as root, for debootstrap; DOCKER_HOST as for docker)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** The base image names the Dockerfile and docker-compose.yml use. */
export const BASE_IMAGES = {
  node: "node:20-slim",
  nats: "nats:2.9-alpine",
  postgres: "postgres:15-alpine",
} as const;

export const ROOTFS_IMAGE = "geode-local/bookworm:minbase";
const LABEL = "org.geode.local-base";
const RECIPES = path.join(import.meta.dirname, "local-bases");

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end and returns what it printed; `input` is piped into its stdin. Killed
 * (and reported as code null) after `timeoutMs`.
 */
export function runCommand(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; input?: ChildProcess } = {},
): Promise<CommandResult> {
  const child = spawn(command, args, {
    env: options.env ?? process.env,
    cwd: options.cwd,
    stdio: [options.input ? "pipe" : "ignore", "pipe", "pipe"],
  });
  if (options.input?.stdout && child.stdin) options.input.stdout.pipe(child.stdin);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (b: Buffer) => (stdout += b.toString("utf8")));
  child.stderr?.on("data", (b: Buffer) => (stderr += b.toString("utf8")));
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 600_000);
  return new Promise((resolve) => {
    child.once("error", (err) => {
      clearTimeout(timer);
      resolve({ code: 127, stdout, stderr: `${stderr}${err.message}\n` });
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Throws with the end of what the command printed when it did not exit 0. */
async function mustRun(command: string, args: string[], options: Parameters<typeof runCommand>[2] = {}) {
  const r = await runCommand(command, args, options);
  if (r.code !== 0)
    throw new Error(
      `${command} ${args.slice(0, 3).join(" ")} … exited ${r.code}:\n${(r.stdout + r.stderr).slice(-3_000)}`,
    );
  return r;
}

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/** The `org.geode.local-base` label of a local image; null without it; undefined when there is no such image. */
async function baseLabel(env: NodeJS.ProcessEnv, image: string): Promise<string | null | undefined> {
  const r = await runCommand(
    "docker",
    ["image", "inspect", "-f", `{{ index .Config.Labels "${LABEL}" }}`, image],
    {
      env,
      timeoutMs: 30_000,
    },
  );
  if (r.code !== 0) return undefined;
  const value = r.stdout.trim();
  return value === "" || value === "<no value>" ? null : value;
}

/**
 * The Debian mirror and suite apt uses (deb822 `.sources` or a `sources.list` line), so
 * debootstrap reaches the same mirror apt does.
 */
export function aptMirror(root = "/etc/apt"): { uri: string; suite: string } {
  const fallback = { uri: "http://deb.debian.org/debian", suite: "bookworm" };
  const deb822 = path.join(root, "sources.list.d/debian.sources");
  if (existsSync(deb822)) {
    for (const stanza of readFileSync(deb822, "utf8").split(/\n\s*\n/)) {
      const field = (name: string) =>
        new RegExp(`^${name}:\\s*(.+)$`, "m").exec(stanza)?.[1]?.trim().split(/\s+/);
      const uri = field("URIs")?.[0];
      const suite = field("Suites")?.find((s) => /^[a-z]+$/.test(s));
      if (uri && suite && !/security/.test(uri)) return { uri, suite };
    }
  }
  const list = path.join(root, "sources.list");
  if (existsSync(list)) {
    const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+([a-z]+)\s/m.exec(readFileSync(list, "utf8"));
    if (m?.[1] && m[2]) return { uri: m[1], suite: m[2] };
  }
  return fallback;
}

/** Trimmed like Debian's slim images: no documentation, manuals or locales, now or in later apt installs. */
const SLIM_DPKG = [
  "path-exclude /usr/share/doc/*",
  "path-include /usr/share/doc/*/copyright",
  "path-exclude /usr/share/man/*",
  "path-exclude /usr/share/info/*",
  "path-exclude /usr/share/locale/*",
  "path-include /usr/share/locale/locale.alias",
  "",
].join("\n");

async function buildRootfs(env: NodeJS.ProcessEnv, key: string, mirror: { uri: string; suite: string }) {
  const dir = mkdtempSync(path.join(tmpdir(), "geode-rootfs-"));
  try {
    await mustRun("debootstrap", ["--variant=minbase", mirror.suite, dir, mirror.uri], {
      timeoutMs: 900_000,
    });
    writeFileSync(path.join(dir, "etc/dpkg/dpkg.cfg.d/geode-slim"), SLIM_DPKG);
    for (const d of [
      "usr/share/doc",
      "usr/share/man",
      "usr/share/info",
      "usr/share/locale",
      "var/lib/apt/lists",
    ])
      rmSync(path.join(dir, d), { recursive: true, force: true });
    rmSync(path.join(dir, "var/cache/apt"), { recursive: true, force: true });
    const tar = spawn("tar", ["-C", dir, "-c", "."], { stdio: ["ignore", "pipe", "inherit"] });
    await mustRun(
      "docker",
      ["import", "--change", `LABEL ${LABEL}=${key}`, "--change", 'CMD ["bash"]', "-", ROOTFS_IMAGE],
      { env, input: tar, timeoutMs: 300_000 },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** This machine's Node, npm and corepack: the binary and the folder npm is installed in. */
function hostNode(): { binary: string; modules: string } {
  const binary = realpathSync(process.execPath);
  const modules = path.resolve(path.dirname(binary), "../lib/node_modules");
  if (!existsSync(path.join(modules, "npm/package.json")))
    throw new Error(`no npm next to ${binary} (looked in ${modules}): the node:20-slim stand-in needs it`);
  return { binary, modules };
}

const version = (pkg: string) =>
  existsSync(pkg) ? String((JSON.parse(readFileSync(pkg, "utf8")) as { version?: unknown }).version) : "none";

async function buildNodeBase(env: NodeJS.ProcessEnv, key: string) {
  const { binary, modules } = hostNode();
  const ctx = mkdtempSync(path.join(tmpdir(), "geode-node-base-"));
  try {
    cpSync(binary, path.join(ctx, "node"));
    for (const m of ["npm", "corepack"])
      if (existsSync(path.join(modules, m)))
        cpSync(path.join(modules, m), path.join(ctx, "lib", m), { recursive: true });
    cpSync(path.join(RECIPES, "node.Dockerfile"), path.join(ctx, "Dockerfile"));
    await mustRun("docker", ["build", "-q", "--label", `${LABEL}=${key}`, "-t", BASE_IMAGES.node, ctx], {
      env,
    });
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
}

export type BaseOutcome = "present" | "pulled" | "built";

interface Recipe {
  image: string;
  /** Everything the image is built from, digested into its label. */
  inputs(): string;
  build(env: NodeJS.ProcessEnv, key: string): Promise<void>;
}

const recipeText = (...files: string[]) =>
  files.map((f) => readFileSync(path.join(RECIPES, f), "utf8")).join("\0");

function recipes(rootKey: string): Recipe[] {
  const fromRecipes = (image: string, dockerfile: string, ...files: string[]): Recipe => ({
    image,
    inputs: () => rootKey + recipeText(dockerfile, ...files),
    build: (env, key) =>
      mustRun("docker", ["build", "-q", "--label", `${LABEL}=${key}`, "-t", image, "-f", dockerfile, "."], {
        env,
        cwd: RECIPES,
      }).then(() => undefined),
  });
  return [
    {
      image: BASE_IMAGES.node,
      inputs: () => {
        const { binary, modules } = hostNode();
        const npm = version(path.join(modules, "npm/package.json"));
        const corepack = version(path.join(modules, "corepack/package.json"));
        return `${rootKey}${recipeText("node.Dockerfile")}\0${sha256(readFileSync(binary))}\0${npm}\0${corepack}`;
      },
      build: buildNodeBase,
    },
    fromRecipes(BASE_IMAGES.nats, "nats.Dockerfile", "nats-entrypoint.sh"),
    fromRecipes(BASE_IMAGES.postgres, "postgres.Dockerfile", "postgres-entrypoint.sh"),
  ];
}

/**
 * Makes sure each base image exists in the engine that `env` points `docker` at: an image already
 * there is kept (an official one, or a stand-in built from the same inputs); a missing one is
 * pulled, and where that fails built from Debian packages. Returns what happened to each.
 */
export async function ensureBaseImages(
  env: NodeJS.ProcessEnv = process.env,
  log: (line: string) => void = () => undefined,
): Promise<Record<string, BaseOutcome>> {
  const mirror = aptMirror();
  const rootKey = sha256(JSON.stringify({ mirror, variant: "minbase", slim: SLIM_DPKG }));
  const outcome: Record<string, BaseOutcome> = {};
  for (const recipe of recipes(rootKey)) {
    const key = sha256(recipe.inputs());
    const label = await baseLabel(env, recipe.image);
    if (label === null || label === key) {
      outcome[recipe.image] = "present";
      continue;
    }
    if (
      label === undefined &&
      (await runCommand("docker", ["pull", "-q", recipe.image], { env, timeoutMs: 120_000 })).code === 0
    ) {
      outcome[recipe.image] = "pulled";
      continue;
    }
    if ((await baseLabel(env, ROOTFS_IMAGE)) !== rootKey) {
      log(`building ${ROOTFS_IMAGE} with debootstrap from ${mirror.uri} ${mirror.suite}`);
      await buildRootfs(env, rootKey, mirror);
    }
    log(`building the local stand-in for ${recipe.image}`);
    await recipe.build(env, key);
    outcome[recipe.image] = "built";
  }
  return outcome;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const outcome = await ensureBaseImages(process.env, (line) => process.stderr.write(`${line}\n`));
  for (const [image, what] of Object.entries(outcome)) process.stdout.write(`${image}: ${what}\n`);
}
