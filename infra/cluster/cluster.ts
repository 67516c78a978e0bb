/**
 * A three-node NATS JetStream cluster on loopback ports, for development and tests
 * (docs/operations.md, "A NATS cluster with replicated streams"). Each node is Debian's
 * `nats-server` (2.9) with its own client and route port (free ones, asked of the OS), its own store
 * directory under one temporary folder, and, with `auth`, the per-role users of infra/nats (the same
 * file every node includes).
 *
 *   pnpm exec tsx infra/cluster/cluster.ts                 # three nodes, no auth; prints NATS_URL
 *   pnpm exec tsx infra/cluster/cluster.ts --auth          # with the per-role users of namespace geode
 *   pnpm exec tsx infra/cluster/cluster.ts --nodes 5 --namespace prod --handler policy-guard
 *
 * It runs in the foreground until Ctrl-C, then stops every node and removes the folder (`--keep`
 * leaves it). The committed `nats-1.conf` … `nats-3.conf` are the same node configuration for the
 * compose profile `cluster` (host names `nats-1` … `nats-3`), rendered by `renderClusterNode`:
 *
 *   pnpm exec tsx infra/cluster/cluster.ts --write-compose-configs
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { findNatsServerBinary, freePort, portOpen } from "@geode/local-server";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import {
  DEFAULT_HANDLERS,
  type NatsRolesOptions,
  type NatsUser,
  natsUsers,
  passwordEnv,
  renderNatsConfig,
} from "../nats/nats-roles.js";

/** The cluster's name in every node's `cluster` block. */
export const CLUSTER_NAME = "geode";

export interface ClusterNodeConfig {
  /** `server_name`, unique in the cluster. */
  name: string;
  /** Client `host:port`. */
  listen: string;
  /** Route `host:port` this node listens on. */
  clusterListen: string;
  /** Route URLs of every node (its own included: nats-server skips it). */
  routes: string[];
  /** JetStream store directory. */
  storeDir: string;
  /** The per-role users file to include (relative to this file's folder), or none. */
  include?: string | undefined;
  /** Monitoring port (`/healthz`), or none. */
  httpPort?: number | undefined;
}

/** One node's nats-server configuration. */
export function renderClusterNode(c: ClusterNodeConfig): string {
  return [
    `# GEODE JetStream cluster node ${c.name} (infra/cluster/cluster.ts renders it; regenerate instead of editing).`,
    ...(c.include ? [`include "${c.include}"`, ""] : []),
    `server_name: ${c.name}`,
    `listen: ${JSON.stringify(c.listen)}`,
    ...(c.httpPort !== undefined ? [`http_port: ${c.httpPort}`] : []),
    // After the include: its `jetstream {}` only turns JetStream on, this one says where it stores.
    `jetstream { store_dir: ${JSON.stringify(c.storeDir)} }`,
    "cluster {",
    `  name: ${CLUSTER_NAME}`,
    `  listen: ${JSON.stringify(c.clusterListen)}`,
    "  routes: [",
    ...c.routes.map((r) => `    ${JSON.stringify(r)}`),
    "  ]",
    "}",
    "",
  ].join("\n");
}

/** The committed node configurations of the compose profile `cluster` (file name → text). */
export function composeClusterNodes(nodes = 3): Record<string, string> {
  const names = Array.from({ length: nodes }, (_, i) => `nats-${i + 1}`);
  return Object.fromEntries(
    names.map((name) => [
      `${name}.conf`,
      renderClusterNode({
        name,
        listen: "0.0.0.0:4222",
        clusterListen: "0.0.0.0:6222",
        routes: names.map((n) => `nats-route://${n}:6222`),
        storeDir: "/data",
        include: "geode.conf",
        httpPort: 8222,
      }),
    ]),
  );
}

function natsServerBinary(): string {
  const fromEnv = process.env["NATS_SERVER"];
  const found = fromEnv || findNatsServerBinary();
  if (!found) throw new Error("no nats-server binary on PATH or in /usr/sbin (apt-get install nats-server)");
  return found;
}

export interface ClusterNode {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  /** The running process, or undefined while the node is down. */
  readonly child: ChildProcess | undefined;
  /** What the node logged since it last started (bounded). */
  output(): string;
  /** SIGKILL (default) or SIGTERM; resolves once the process is gone. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the node again on the same ports and store; resolves once it accepts connections. */
  start(): Promise<void>;
}

export interface NatsCluster {
  readonly nodes: ClusterNode[];
  /** Every node's client URL, comma-separated (what `NATS_URL` takes). */
  readonly url: string;
  /** The folder holding each node's configuration and store. */
  readonly dir: string;
  /** With `auth`: the users and their passwords. */
  readonly users: NatsUser[];
  password(user: string): string;
  /** Stops every node (SIGTERM) and removes the folder unless it was given or `keep` is set. */
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Default 3. */
  nodes?: number;
  /** Parent folder for configurations and stores; default a fresh temporary folder (removed on stop). */
  dir?: string;
  /** The per-role users of infra/nats (their passwords random); default none (no auth). */
  auth?: NatsRolesOptions | false;
  /** Keep the folder on stop. */
  keep?: boolean;
  /** How long to wait for the JetStream meta leader. Default 30 s. */
  readyTimeoutMs?: number;
}

/** Starts the cluster and waits until JetStream answers (a meta leader is elected). */
export async function startCluster(options: ClusterOptions = {}): Promise<NatsCluster> {
  const count = options.nodes ?? 3;
  const binary = natsServerBinary();
  const dir = options.dir ?? mkdtempSync(path.join(tmpdir(), "geode-cluster-"));
  const ownsDir = options.dir === undefined && options.keep !== true;
  mkdirSync(dir, { recursive: true });
  const auth = options.auth === undefined || options.auth === false ? undefined : options.auth;
  const users = auth ? natsUsers(auth) : [];
  const passwords = new Map(users.map((u) => [u.user, `p${randomBytes(12).toString("hex")}`]));
  const env = passwordEnv(users, (u) => passwords.get(u.user) ?? "");
  if (auth) writeFileSync(path.join(dir, "geode.conf"), renderNatsConfig(auth));
  const ports = await Promise.all(
    Array.from({ length: count }, async () => ({ client: await freePort(), route: await freePort() })),
  );
  const routes = ports.map((p) => `nats-route://127.0.0.1:${p.route}`);
  const nodes = ports.map((p, i) => {
    const name = `n${i + 1}`;
    const configFile = path.join(dir, `${name}.conf`);
    writeFileSync(
      configFile,
      renderClusterNode({
        name,
        listen: `127.0.0.1:${p.client}`,
        clusterListen: `127.0.0.1:${p.route}`,
        routes,
        storeDir: path.join(dir, name),
        include: auth ? "geode.conf" : undefined,
      }),
    );
    return clusterNode(binary, name, p.client, configFile, env);
  });
  const cluster: NatsCluster = {
    nodes,
    url: nodes.map((n) => n.url).join(","),
    dir,
    users,
    password: (user) => {
      const p = passwords.get(user);
      if (p === undefined) throw new Error(`no user ${user}`);
      return p;
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop("SIGTERM")));
      if (ownsDir) rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((n) => n.start()));
    const probe = auth ? { user: "operator", pass: cluster.password("operator") } : {};
    await waitForJetStream(cluster.url, probe, options.readyTimeoutMs ?? 30_000);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** Waits until the cluster's JetStream answers an account-info request. */
export async function waitForJetStream(
  url: string,
  auth: { user?: string; pass?: string },
  timeoutMs: number,
): Promise<void> {
  const nc = await connect({ servers: url.split(","), ...auth });
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await jsm.getAccountInfo();
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`JetStream cluster not ready in ${timeoutMs} ms: ${err}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } finally {
    await nc.close();
  }
}

function clusterNode(
  binary: string,
  name: string,
  port: number,
  configFile: string,
  env: Record<string, string>,
): ClusterNode {
  let child: ChildProcess | undefined;
  let out = "";
  let exited: Promise<void> = Promise.resolve();
  return {
    name,
    port,
    url: `nats://127.0.0.1:${port}`,
    get child() {
      return child;
    },
    output: () => out,
    async stop(signal = "SIGKILL") {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      c.kill(signal);
      const timer = setTimeout(() => c.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
      child = undefined;
    },
    async start() {
      if (child && child.exitCode === null && child.signalCode === null) return;
      out = "";
      const c = spawn(binary, ["-c", configFile], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = c;
      const collect = (chunk: Buffer) => {
        out = (out + chunk.toString("utf8")).slice(-20_000);
      };
      c.stdout?.on("data", collect);
      c.stderr?.on("data", collect);
      exited = new Promise((resolve) => c.once("exit", () => resolve()));
      const deadline = Date.now() + 15_000;
      for (;;) {
        if (c.exitCode !== null)
          throw new Error(`nats-server ${name} exited (${c.exitCode}) at start:\n${out.trim()}`);
        if (await portOpen(port)) return;
        if (Date.now() > deadline)
          throw new Error(`nats-server ${name} did not open port ${port}:\n${out.trim()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      nodes: { type: "string", default: "3" },
      auth: { type: "boolean", default: false },
      namespace: { type: "string" },
      handler: { type: "string", multiple: true },
      dir: { type: "string" },
      keep: { type: "boolean", default: false },
      "write-compose-configs": { type: "boolean", default: false },
    },
  });
  if (values["write-compose-configs"]) {
    for (const [file, text] of Object.entries(composeClusterNodes()))
      writeFileSync(path.join(import.meta.dirname, file), text);
    return;
  }
  const nodes = Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 1)
    throw new Error(`--nodes must be a positive integer, got ${values.nodes}`);
  const cluster = await startCluster({
    nodes,
    ...(values.dir ? { dir: values.dir } : {}),
    keep: values.keep,
    auth: values.auth
      ? {
          ...(values.namespace ? { namespace: values.namespace } : {}),
          handlers: values.handler ?? [...DEFAULT_HANDLERS],
        }
      : false,
  });
  const lines = [
    `JetStream cluster of ${nodes} nodes is up (folder ${cluster.dir}).`,
    "",
    `export NATS_URL=${cluster.url}`,
    ...(cluster.users.length > 0
      ? [
          "",
          "# the per-role users' passwords:",
          ...cluster.users.map((u) => `export ${u.passwordEnv}=${cluster.password(u.user)}`),
        ]
      : []),
    "",
    "Ctrl-C stops every node.",
    "",
  ];
  process.stdout.write(lines.join("\n"));
  const stop = () => {
    void cluster.stop().then(() => process.exit(0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
