/**
 * A Docker engine for the container tests. A running one is used as it is (`DOCKER_HOST`, or
 * /var/run/docker.sock): nothing of it is stopped. Otherwise this machine gets one of its own:
 * Debian's docker.io (with iptables, debootstrap and docker-compose) is installed when missing,
 * and `dockerd` runs with its own socket, data, exec root and pid file under GEODE_TEST_DOCKER_DIR
 * (default /var/cache/geode-test-docker). Its data folder outlives the run, so the base images and
 * the build cache make the next run quick; the daemon does not: `stop()` ends it and removes the
 * bridges and iptables rules it made, which dockerd leaves behind.
 *
 * One engine of its own per machine: runs of the suite in other checkouts wait for the one that
 * holds it. A daemon left running by a run that died is taken over and stopped like one started here.
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { processAlive as alive } from "@geode/testing";
import { runCommand } from "../infra/docker/local-bases.js";

export interface DockerEngine {
  /** The environment `docker` and compose run with: PATH and DOCKER_HOST. */
  readonly env: NodeJS.ProcessEnv;
  /** True when the daemon is this module's: `stop()` ends it. */
  readonly owned: boolean;
  readonly version: string;
  /** Ends the daemon (and so every container) when it is this module's; idempotent. */
  stop(): Promise<void>;
}

/**
 * Removes every container (with its anonymous volumes), volume and network of an engine of this
 * module's own; images stay (the base images and the build cache). Its data outlives a run, and a
 * run that died leaves its stacks there, which the daemon would start again.
 */
async function clearEngine(env: NodeJS.ProcessEnv): Promise<void> {
  const ids = async (args: string[]) =>
    (await runCommand("docker", args, { env, timeoutMs: 60_000 })).stdout.split("\n").filter(Boolean);
  const containers = await ids(["ps", "-a", "-q"]);
  if (containers.length > 0)
    await runCommand("docker", ["rm", "-f", "-v", ...containers], { env, timeoutMs: 300_000 });
  const volumes = await ids(["volume", "ls", "-q"]);
  if (volumes.length > 0)
    await runCommand("docker", ["volume", "rm", "-f", ...volumes], { env, timeoutMs: 300_000 });
  await runCommand("docker", ["network", "prune", "-f"], { env, timeoutMs: 60_000 });
}

const PACKAGES = ["docker.io", "iptables", "debootstrap", "docker-compose", "iproute2"];
const TOOLS = ["dockerd", "docker", "iptables", "debootstrap", "ip"];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const readPid = (file: string) => {
  const pid = existsSync(file) ? Number(readFileSync(file, "utf8").trim()) : Number.NaN;
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
};

/**
 * The pid in `file` when that process runs and its command line names `mark` (this engine's
 * folder): a pid file left behind may name a pid reused by an unrelated process.
 */
function runningPid(file: string, mark: string): number | undefined {
  const pid = readPid(file);
  if (pid === undefined || !alive(pid)) return undefined;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(mark) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** The server's version, or undefined when nothing answers at `host`. */
async function serverVersion(host: string): Promise<string | undefined> {
  const r = await runCommand("docker", ["version", "--format", "{{.Server.Version}}"], {
    env: { ...process.env, DOCKER_HOST: host },
    timeoutMs: 15_000,
  });
  return r.code === 0 ? r.stdout.trim() : undefined;
}

async function which(tool: string): Promise<boolean> {
  return (await runCommand("sh", ["-c", `command -v ${tool}`])).code === 0;
}

/** Installs Debian's engine when a tool is missing (root and apt-get needed; .ci/run does it first). */
async function installEngine(): Promise<void> {
  const missing = [];
  for (const t of [...TOOLS, "docker-compose"]) if (!(await which(t))) missing.push(t);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0 || !(await which("apt-get")))
    throw new Error(
      `no Docker engine and none can be installed here (missing: ${missing.join(", ")}; needs root and apt-get)`,
    );
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  for (const args of [
    ["update", "-qq"],
    ["install", "-y", "-qq", "--no-install-recommends", ...PACKAGES],
  ]) {
    const r = await runCommand("apt-get", args, { env, timeoutMs: 600_000 });
    if (r.code !== 0) throw new Error(`apt-get ${args.join(" ")} failed:\n${r.stderr.slice(-2_000)}`);
  }
}

/** Holds the machine's one engine of its own: a folder made atomically, with the holder's pid. */
async function acquire(lock: string, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(path.join(lock, "pid"), String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = readPid(path.join(lock, "pid"));
    if (holder === undefined || !alive(holder)) {
      // A holder that is gone (or one that died between mkdir and writing its pid, given time).
      await sleep(holder === undefined ? 2_000 : 0);
      if (readPid(path.join(lock, "pid")) === holder) rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`the test Docker engine is held by pid ${holder} (${lock})`);
    await sleep(2_000);
  }
}

/** Rules and chains of the iptables tables that mention Docker, as iptables-save prints them. */
export async function dockerIptables(): Promise<string[]> {
  const r = await runCommand("iptables-save", []);
  if (r.code !== 0) return [];
  return r.stdout.split("\n").filter((l) => /DOCKER|docker0|\bbr-[0-9a-f]{12}\b/.test(l));
}

/** Bridges dockerd made (`docker0`, one `br-<id>` per compose network). */
export async function dockerBridges(): Promise<string[]> {
  const r = await runCommand("ip", ["-o", "link", "show", "type", "bridge"]);
  return [...r.stdout.matchAll(/^\d+: (docker0|br-[0-9a-f]{12})[:@]/gm)].map((m) => m[1] as string);
}

/**
 * What a stopped dockerd leaves: its bridges, and in each iptables table its DOCKER* chains and the
 * rules that jump to them or name its bridges. The FORWARD policy goes back to what it was.
 */
async function removeNetworkLeftovers(forwardPolicy: string): Promise<void> {
  for (const bridge of await dockerBridges()) await runCommand("ip", ["link", "delete", bridge]);
  const saved = await runCommand("iptables-save", []);
  let table = "";
  const chains: Array<[string, string]> = [];
  for (const line of saved.stdout.split("\n")) {
    if (line.startsWith("*")) table = line.slice(1);
    else if (line.startsWith(":DOCKER")) chains.push([table, line.slice(1).split(" ")[0] as string]);
    else if (line.startsWith("-A ") && /DOCKER|docker0|\bbr-[0-9a-f]{12}\b/.test(line)) {
      const [, chain = ""] = line.split(" ");
      if (!chain.startsWith("DOCKER"))
        await runCommand("sh", ["-c", `iptables -t ${table} -D ${line.slice(3)}`]);
    }
  }
  for (const [t, c] of chains) await runCommand("iptables", ["-t", t, "-F", c]);
  for (const [t, c] of chains) await runCommand("iptables", ["-t", t, "-X", c]);
  await runCommand("iptables", ["-P", "FORWARD", forwardPolicy]);
}

async function forwardPolicy(): Promise<string> {
  const r = await runCommand("iptables", ["-S", "FORWARD"]);
  return /^-P FORWARD (\w+)/m.exec(r.stdout)?.[1] ?? "ACCEPT";
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (alive(pid) && Date.now() < deadline) await sleep(200);
  return !alive(pid);
}

interface OwnEngine {
  dir: string;
  sock: string;
  pidFile: string;
  containerdPid: string;
  lock: string;
}

function layout(dir: string): OwnEngine {
  return {
    dir,
    sock: path.join(dir, "run/docker.sock"),
    pidFile: path.join(dir, "run/dockerd.pid"),
    containerdPid: path.join(dir, "run/exec/containerd/containerd.pid"),
    lock: path.join(dir, "owner"),
  };
}

/** Starts dockerd (or takes over one a dead run left) and waits for it to answer. */
async function startDaemon(e: OwnEngine, host: string): Promise<string> {
  const left = runningPid(e.pidFile, e.dir);
  if (left !== undefined) {
    const v = await serverVersion(host);
    if (v) return v;
    process.kill(left, "SIGTERM");
    await waitGone(left, 30_000);
  }
  mkdirSync(path.join(e.dir, "run"), { recursive: true });
  rmSync(e.sock, { force: true });
  const log = openSync(path.join(e.dir, "run/dockerd.log"), "w");
  const child = spawn(
    "dockerd",
    [
      `--host=${host}`,
      `--data-root=${path.join(e.dir, "data")}`,
      `--exec-root=${path.join(e.dir, "run/exec")}`,
      `--pidfile=${e.pidFile}`,
      "--storage-driver=overlay2",
    ],
    { detached: true, stdio: ["ignore", log, log] },
  );
  child.unref();
  closeSync(log);
  for (let i = 0; i < 150; i++) {
    const v = await serverVersion(host);
    if (v) return v;
    if (child.exitCode !== null) break;
    await sleep(200);
  }
  const tail = readFileSync(path.join(e.dir, "run/dockerd.log"), "utf8").slice(-3_000);
  throw new Error(`dockerd did not come up on ${host}:\n${tail}`);
}

const dockerEnv = (host: string): NodeJS.ProcessEnv => ({
  PATH: process.env["PATH"],
  HOME: process.env["HOME"],
  DOCKER_HOST: host,
});

/** A running engine, else one of this machine's own (installed and started when needed). */
export async function useDockerEngine(options: { lockWaitMs?: number } = {}): Promise<DockerEngine> {
  const existing =
    process.env["DOCKER_HOST"] ||
    (existsSync("/var/run/docker.sock") ? "unix:///var/run/docker.sock" : undefined);
  if (existing) {
    const v = await serverVersion(existing);
    if (!v) throw new Error(`no Docker engine answers at ${existing}`);
    return { env: dockerEnv(existing), owned: false, version: v, stop: async () => {} };
  }
  await installEngine();
  const e = layout(process.env["GEODE_TEST_DOCKER_DIR"] || "/var/cache/geode-test-docker");
  mkdirSync(e.dir, { recursive: true });
  await acquire(e.lock, options.lockWaitMs ?? 30 * 60_000);
  const host = `unix://${e.sock}`;
  let policy = "ACCEPT";
  let v: string;
  try {
    // A daemon of ours that a dead run left: taken over when it runs (its FORWARD policy replaced
    // one that was Linux's default), cleaned up after when it died (its pid file stays).
    const running = runningPid(e.pidFile, e.dir);
    if (running === undefined && existsSync(e.pidFile)) await removeNetworkLeftovers("ACCEPT");
    if (running === undefined) policy = await forwardPolicy();
    v = await startDaemon(e, host);
    await clearEngine(dockerEnv(host));
  } catch (err) {
    rmSync(e.lock, { recursive: true, force: true });
    throw err;
  }
  let stopped = false;
  return {
    env: dockerEnv(host),
    owned: true,
    version: v,
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        await stopDaemon(e);
        await removeNetworkLeftovers(policy);
      } finally {
        rmSync(e.lock, { recursive: true, force: true });
      }
    },
  };
}

/** SIGTERM to dockerd (it stops every container, then its containerd), SIGKILL after a minute. */
async function stopDaemon(e: OwnEngine): Promise<void> {
  const pid = runningPid(e.pidFile, e.dir);
  const containerd = runningPid(e.containerdPid, e.dir);
  if (pid !== undefined) {
    process.kill(pid, "SIGTERM");
    if (!(await waitGone(pid, 60_000))) process.kill(pid, "SIGKILL");
    await waitGone(pid, 10_000);
  }
  if (containerd !== undefined && !(await waitGone(containerd, 10_000))) process.kill(containerd, "SIGKILL");
}

/** Processes of this module's engine still running (dockerd, its containerd), by their pid files. */
export function enginePids(
  dir = process.env["GEODE_TEST_DOCKER_DIR"] || "/var/cache/geode-test-docker",
): number[] {
  const e = layout(dir);
  return [runningPid(e.pidFile, e.dir), runningPid(e.containerdPid, e.dir)].filter(
    (p): p is number => p !== undefined,
  );
}
