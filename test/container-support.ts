/**
 * What the container tests run the compose stack with: the compose command (Compose v2's `docker
 * compose` where the plugin is installed, else v1.29's `docker-compose`), one compose project per
 * stack (its own name, env file and free host ports), the README's and docs/deploy.md's commands
 * as those documents write them, and the CA certificates npm inside a build needs here.
 */
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { rootCertificates } from "node:tls";
import { REPO_ROOT } from "@geode/testing";
import { type CommandResult, runCommand } from "../infra/docker/local-bases.js";
import type { DockerEngine } from "./docker-engine.js";

export { runCommand };

/**
 * The certificates of this machine's CA bundle (NODE_EXTRA_CA_CERTS, else Debian's) that Node does
 * not trust by itself: behind a TLS-intercepting proxy, npm inside a build fails without them.
 * Passed to the build as BUILD_CA_CERTS, which only the build stages read.
 */
export function buildCaCerts(env: NodeJS.ProcessEnv = process.env): string {
  const file = env["NODE_EXTRA_CA_CERTS"] || "/etc/ssl/certs/ca-certificates.crt";
  if (!existsSync(file)) return "";
  const norm = (pem: string) => pem.replace(/\s+/g, "");
  const known = new Set(rootCertificates.map(norm));
  const certs = readFileSync(file, "utf8").match(
    /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g,
  );
  return (certs ?? []).filter((c) => !known.has(norm(c))).join("\n");
}

/** `docker compose` (v2) when the plugin answers, else Debian's `docker-compose` (v1.29). */
async function composeCommand(env: NodeJS.ProcessEnv): Promise<string[]> {
  if ((await runCommand("docker", ["compose", "version"], { env, timeoutMs: 15_000 })).code === 0)
    return ["docker", "compose"];
  if ((await runCommand("docker-compose", ["version"], { env, timeoutMs: 15_000 })).code === 0)
    return ["docker-compose"];
  throw new Error("neither `docker compose` (Compose v2) nor `docker-compose` (v1.29) is installed");
}

/** The shell commands of the first ```sh block after `heading` in a document of the repository. */
export function documentedCommands(file: string, heading: string): string[] {
  const text = readFileSync(path.join(REPO_ROOT, file), "utf8");
  const start = text.indexOf(heading);
  if (start === -1) throw new Error(`${file} has no heading ${heading}`);
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(start))?.[1] ?? "";
  return block
    .split("\n")
    .map((l) => l.replace(/\s+#.*$/, "").trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
}

export interface ComposeStack {
  readonly project: string;
  /** The stack's env file (written by `sh infra/docker/env.sh`, as a deployment's .env). */
  readonly envFile: string;
  /** `docker compose <args>` for this project, in the repository root. */
  compose(args: string[], options?: { env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<CommandResult>;
  /** Like compose, and throws with its output unless it exits 0. */
  mustCompose(args: string[], options?: { env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<string>;
  /**
   * Runs one command of the documentation as this stack: `sh infra/docker/env.sh …` writes its env
   * file, `docker compose …` is this project's compose, `geode …` the compiled CLI on this host as
   * the operator, through the published NATS port. Throws unless the command is one of `documented`.
   */
  documented(
    documented: string[],
    line: string,
    options?: { env?: NodeJS.ProcessEnv },
  ): Promise<CommandResult>;
  /** The compiled `geode` on this host, as the operator, through the published NATS port. */
  geode(args: string[], options?: { env?: NodeJS.ProcessEnv }): Promise<CommandResult>;
  /** A variable of the env file. */
  variable(name: string): string;
  /** The host port a service's container port is published on. */
  published(service: string, port: number): Promise<number>;
  /** The container of a service (its one replica). */
  container(service: string): Promise<string>;
  /** `psql` in the PostgreSQL container: one query, unaligned rows. */
  psql(sql: string): Promise<string>;
  /** Every container, volume and network of this project (compose labels them). */
  leftovers(): Promise<string[]>;
  /** `down -v` with every profile, then the temporary folder. */
  remove(): Promise<void>;
}

export async function createStack(engine: DockerEngine, label: string): Promise<ComposeStack> {
  const compose = await composeCommand(engine.env);
  const project = `geodetest-${label}-${randomBytes(3).toString("hex")}`;
  const dir = mkdtempSync(path.join(tmpdir(), "geode-stack-"));
  const envFile = path.join(dir, ".env");
  const run = (args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}) =>
    runCommand(compose[0] as string, [...compose.slice(1), "-p", project, "--env-file", envFile, ...args], {
      cwd: REPO_ROOT,
      env: { ...engine.env, ...options.env },
      timeoutMs: options.timeoutMs ?? 600_000,
    });
  const docker = (args: string[]) => runCommand("docker", args, { env: engine.env, timeoutMs: 60_000 });
  const stack: ComposeStack = {
    project,
    envFile,
    compose: run,
    async mustCompose(args, options) {
      const r = await run(args, options);
      if (r.code !== 0)
        throw new Error(
          `compose ${args.join(" ")} exited ${r.code}:\n${(r.stdout + r.stderr).slice(-4_000)}`,
        );
      return r.stdout;
    },
    documented: (documented, line, options) => runDocumented(stack, documented, line, options),
    async geode(args, options = {}) {
      const env = {
        PATH: process.env["PATH"],
        HOME: process.env["HOME"],
        NATS_URL: `nats://127.0.0.1:${await stack.published("nats", 4222)}`,
        NATS_USER: "operator",
        NATS_PASS: stack.variable("GEODE_NATS_PASS_OPERATOR"),
        GEODE_NAMESPACE: "geode",
        ...options.env,
      };
      return runCommand(process.execPath, [path.join(REPO_ROOT, "packages/cli/bin/geode.mjs"), ...args], {
        cwd: REPO_ROOT,
        env,
        timeoutMs: 120_000,
      });
    },
    variable(name) {
      const m = new RegExp(`^${name}=(.*)$`, "m").exec(readFileSync(envFile, "utf8"));
      if (!m) throw new Error(`${name} is not in ${envFile}`);
      return m[1] as string;
    },
    async published(service, port) {
      const r = await docker(["port", await stack.container(service), `${port}/tcp`]);
      const hostPort = Number(r.stdout.trim().split("\n")[0]?.split(":").at(-1));
      if (!hostPort) throw new Error(`${service}:${port} is not published: ${r.stdout}${r.stderr}`);
      return hostPort;
    },
    async container(service) {
      const r = await docker([
        "ps",
        "-a",
        "-q",
        "--filter",
        `label=com.docker.compose.project=${project}`,
        "--filter",
        `label=com.docker.compose.service=${service}`,
        "--filter",
        "label=com.docker.compose.oneoff=False",
      ]);
      const id = r.stdout.trim().split("\n")[0];
      if (!id) throw new Error(`no container for ${service} in ${project}`);
      return id;
    },
    async psql(sql) {
      const id = await stack.container("postgres");
      const r = await docker(["exec", id, "psql", "-U", "geode", "-d", "geode", "-Atc", sql]);
      if (r.code !== 0) throw new Error(`psql: ${r.stderr}`);
      return r.stdout;
    },
    async leftovers() {
      const filter = `label=com.docker.compose.project=${project}`;
      const out: string[] = [];
      for (const kind of ["container", "volume", "network"]) {
        const args =
          kind === "container"
            ? ["ps", "-a", "-q", "--filter", filter]
            : [kind, "ls", "-q", "--filter", filter];
        out.push(
          ...(await docker(args)).stdout
            .split("\n")
            .filter(Boolean)
            .map((x) => `${kind} ${x}`),
        );
      }
      return out;
    },
    async remove() {
      if (existsSync(envFile))
        await run([
          "--profile",
          "cluster",
          "--profile",
          "console",
          "--profile",
          "demo",
          "down",
          "-v",
          "-t",
          "20",
        ]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return stack;
}

/** Free host ports (0) and the test's own image tag, after what env.sh wrote. */
function testSettings(envFile: string): void {
  appendFileSync(
    envFile,
    [
      "# the container tests",
      "GEODE_NATS_PORT=0",
      "GEODE_GATEWAY_PORT=0",
      "GEODE_CONSOLE_PORT=0",
      "GEODE_IMAGE_TAG=test",
      "",
    ].join("\n"),
  );
}

async function runDocumented(
  stack: ComposeStack,
  documented: string[],
  line: string,
  options: { env?: NodeJS.ProcessEnv } = {},
): Promise<CommandResult> {
  if (!documented.includes(line))
    throw new Error(`not a documented command: ${line}\n${documented.join("\n")}`);
  const words = line.split(/\s+/);
  if (line.startsWith("sh infra/docker/env.sh")) {
    const r = await runCommand("sh", [...words.slice(1), stack.envFile], { cwd: REPO_ROOT });
    if (r.code === 0) testSettings(stack.envFile);
    return r;
  }
  if (line.startsWith("docker compose ")) return stack.compose(words.slice(2), options);
  if (line.startsWith("geode ")) return stack.geode(words.slice(1), options);
  throw new Error(`no way to run: ${line}`);
}

const CACHE_STAGES = ["deps", "build", "prod"];

/**
 * Tags the Dockerfile's build stages (`geode-build-cache:<stage>`), built with the build arguments
 * compose passes, so that `pruneUntagged` keeps the build cache of the current sources and drops
 * what earlier builds left. For an engine of this machine's own only: its data outlives the run.
 */
export async function keepBuildCache(engine: DockerEngine, buildArgs: Record<string, string>): Promise<void> {
  const args = Object.entries(buildArgs).flatMap(([k, v]) => ["--build-arg", `${k}=${v}`]);
  for (const stage of CACHE_STAGES) {
    const r = await runCommand(
      "docker",
      ["build", "-q", "--target", stage, "-t", `geode-build-cache:${stage}`, ...args, "."],
      {
        cwd: REPO_ROOT,
        env: engine.env,
        timeoutMs: 1_800_000,
      },
    );
    if (r.code !== 0)
      throw new Error(`building stage ${stage} failed:\n${(r.stdout + r.stderr).slice(-4_000)}`);
  }
}

/** Removes every untagged image (superseded builds) from an engine of this machine's own. */
export async function pruneUntagged(engine: DockerEngine): Promise<void> {
  await runCommand("docker", ["image", "prune", "-f"], { env: engine.env, timeoutMs: 300_000 });
}

/** Waits until every named service's container reports `healthy` (throws on timeout, naming them). */
export async function waitHealthy(
  engine: DockerEngine,
  stack: ComposeStack,
  services: readonly string[],
  timeoutMs = 180_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    const states: string[] = [];
    for (const s of services) {
      const id = await stack.container(s).catch(() => undefined);
      const h = id
        ? await runCommand(
            "docker",
            [
              "inspect",
              "-f",
              "{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}",
              id,
            ],
            { env: engine.env },
          )
        : undefined;
      states.push(`${s}: ${h?.stdout.trim() || "no container"}`);
    }
    last = states.join(", ");
    if (states.every((x) => x.endsWith(": healthy"))) return;
    if (Date.now() > deadline) throw new Error(`not healthy in ${timeoutMs / 1000} s: ${last}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}
