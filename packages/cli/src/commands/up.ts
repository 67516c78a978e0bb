import path from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, type GeodeConfig, loadConfig } from "@geode/bus";
import { names as buildNames, type Names } from "@geode/contracts";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type Command, type CommandIO, UsageError } from "../command.js";
import { renderTable } from "../render-table.js";
import { provideDatabase, type UpDatabase } from "../up/embedded-database.js";
import { probeHealth } from "../up/health-probe.js";
import {
  findNatsServerBinary,
  freePort,
  type NatsServerProcess,
  portOpen,
  startNatsServer,
} from "../up/nats-server.js";
import { discoverServices, type ServiceProcess, spawnServiceProcess } from "../up/service-processes.js";

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);
const STOP_GRACE_MS = 15_000;
const COLORS = [36, 35, 33, 32, 34, 31];

function firstServer(natsUrl: string): { host: string; port: number } {
  const first = (natsUrl.split(",")[0] ?? "").trim();
  const url = new URL(first.includes("://") ? first : `nats://${first}`);
  return { host: url.hostname, port: url.port === "" ? 4222 : Number(url.port) };
}

function connectOnce(config: GeodeConfig, servers: string): Promise<NatsConnection> {
  return connect({
    servers,
    name: "geode-up",
    reconnect: false,
    timeout: 3_000,
    ...(config.natsUser !== undefined ? { user: config.natsUser, pass: config.natsPass } : {}),
    ...(config.natsToken !== undefined ? { token: config.natsToken } : {}),
  });
}

const NO_NATS = (url: string) =>
  `NATS is not reachable at ${url}, and no nats-server binary was found to start one.\n` +
  "Get one of:\n" +
  "  - Debian/Ubuntu: sudo apt-get install nats-server   (then run geode up again: it starts it for you)\n" +
  "  - Docker:        docker compose up -d nats           (then NATS_URL=nats://127.0.0.1:4222 geode up)\n" +
  "  - or point NATS_URL at a running nats-server with JetStream.\n";

interface NatsPlan {
  url: string;
  embedded: NatsServerProcess | undefined;
}

/** Uses the NATS at NATS_URL, or starts an embedded one when it is a loopback address nobody serves. */
async function ensureNats(config: GeodeConfig, io: CommandIO): Promise<NatsPlan | number> {
  const { host, port } = firstServer(config.natsUrl);
  if (await portOpen(port, host === "localhost" ? "127.0.0.1" : host.replace(/^\[|\]$/g, ""))) {
    return { url: config.natsUrl, embedded: undefined };
  }
  const binary = findNatsServerBinary(io.env);
  if (!LOOPBACK.has(host) || !binary) {
    io.err(LOOPBACK.has(host) ? NO_NATS(config.natsUrl) : `NATS is not reachable at ${config.natsUrl}.\n`);
    return 1;
  }
  const storeDir = path.resolve(".geode/nats");
  const usePort = (await portOpen(port)) ? await freePort() : port;
  io.out(`geode up: no NATS at ${config.natsUrl}; starting ${binary} with JetStream in ${storeDir}\n`);
  try {
    const embedded = await startNatsServer({ binary, port: usePort, storeDir, detached: true });
    return { url: embedded.url, embedded };
  } catch (err) {
    io.err(`geode up: could not start nats-server: ${err instanceof Error ? err.message : err}\n`);
    return 1;
  }
}

/**
 * `geode up`: every service under services/*, one foreground process tree, prefixed human log
 * lines, a ready table once each answers health, and a clean stop of all on SIGINT/SIGTERM.
 */
export const upCommand: Command = {
  path: ["up"],
  summary: "run every service in the foreground (starting a local nats-server if needed); Ctrl-C stops all",
  usage: "geode up [--only <service,...>] [--ready-timeout <ms>]",
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: { only: { type: "string" }, "ready-timeout": { type: "string", default: "60000" } },
    });
    const readyTimeoutMs = Number(values["ready-timeout"]);
    if (!Number.isInteger(readyTimeoutMs) || readyTimeoutMs <= 0)
      throw new UsageError(`--ready-timeout must be a positive integer (ms), got ${values["ready-timeout"]}`);
    let config: GeodeConfig;
    try {
      config = loadConfig(io.env);
    } catch (err) {
      if (err instanceof ConfigError) {
        io.err(`geode up: ${err.message}\n`);
        return 2;
      }
      throw err;
    }
    let services = discoverServices();
    if (values.only !== undefined) {
      const wanted = values.only.split(",").map((s) => s.trim());
      const unknown = wanted.filter((w) => !services.some((s) => s.name === w));
      if (unknown.length > 0)
        throw new UsageError(
          `unknown service: ${unknown.join(", ")} (found: ${services.map((s) => s.name).join(", ")})`,
        );
      services = services.filter((s) => wanted.includes(s.name));
    }
    if (services.length === 0) {
      io.err("geode up: no services found (services/<name>/src/main.ts)\n");
      return 1;
    }

    // Signals first, so a Ctrl-C during start-up stops whatever is already running.
    let onStop: (signal: NodeJS.Signals) => void = () => undefined;
    const stopRequested = new Promise<NodeJS.Signals>((resolve) => {
      onStop = resolve;
    });
    const onSignal = (signal: NodeJS.Signals) => onStop(signal);
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);

    const plan = await ensureNats(config, io);
    if (typeof plan === "number") {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      return plan;
    }
    const n: Names = buildNames(config.namespace);
    const procs: ServiceProcess[] = [];
    let nc: NatsConnection | undefined;
    let database: UpDatabase | undefined;

    const stopAll = async (signal: NodeJS.Signals) => {
      const alive = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
      for (const p of alive) p.child.kill(signal);
      const timer = setTimeout(() => {
        for (const p of alive) if (p.child.exitCode === null) p.child.kill("SIGKILL");
      }, STOP_GRACE_MS);
      await Promise.all(procs.map((p) => p.exited));
      clearTimeout(timer);
      if (nc && !nc.isClosed()) await nc.close().catch(() => undefined);
      await database?.close().catch(() => undefined);
      await plan.embedded?.stop();
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    };

    try {
      nc = await connectOnce(config, plan.url);
    } catch (err) {
      io.err(
        `geode up: cannot connect to NATS at ${plan.url}: ${err instanceof Error ? err.message : err}\n`,
      );
      await stopAll("SIGTERM");
      return 1;
    }

    const width = Math.max(...services.map((s) => s.name.length));
    const paint = (i: number, s: string) => (io.isTTY ? `\x1b[${COLORS[i % COLORS.length]}m${s}\x1b[0m` : s);
    const prefixOf = new Map(services.map((s, i) => [s.name, paint(i, s.name.padEnd(width))]));
    try {
      database = await provideDatabase(config, services);
    } catch (err) {
      io.err(`geode up: ${err instanceof Error ? err.message : err}\n`);
      await stopAll("SIGTERM");
      return 1;
    }
    const env = {
      ...io.env,
      NATS_URL: plan.url,
      ...(database.url !== undefined ? { DATABASE_URL: database.url } : {}),
    };
    io.out(
      `geode up: namespace ${config.namespace}, NATS ${plan.url}${plan.embedded ? " (embedded)" : ""}, ` +
        `database ${database.label}\n`,
    );
    for (const s of services) {
      procs.push(
        spawnServiceProcess(s, env, (name, line, stream) =>
          (stream === "stderr" ? io.err : io.out)(`${prefixOf.get(name)} | ${line}\n`),
        ),
      );
    }

    type Ended =
      | { kind: "exit"; proc: ServiceProcess; code: number | string }
      | { kind: "signal"; signal: NodeJS.Signals };
    const anyExit: Promise<Ended> = Promise.race(
      procs.map((proc) => proc.exited.then((code): Ended => ({ kind: "exit", proc, code }))),
    );
    const stopSignal: Promise<Ended> = stopRequested.then((signal): Ended => ({ kind: "signal", signal }));

    // Start-up: wait until each service answers health, one exits, time runs out, or a signal.
    const ready = new Map<string, Awaited<ReturnType<typeof probeHealth>>>();
    const deadline = Date.now() + readyTimeoutMs;
    let starting = true;
    const readiness = (async (): Promise<"ready" | "timeout"> => {
      while (starting && ready.size < procs.length) {
        if (Date.now() > deadline) return "timeout";
        const conn = nc;
        const probes = await Promise.all(
          procs.filter((p) => !ready.has(p.name)).map((p) => probeHealth(conn, n, p.name, 1_000)),
        );
        for (const p of probes) if (p.status !== "down") ready.set(p.service, p);
        if (ready.size < procs.length) await new Promise((r) => setTimeout(r, 200));
      }
      return "ready";
    })();
    const started = await Promise.race([readiness, anyExit, stopSignal]);
    starting = false;
    if (started === "timeout" || typeof started === "object") {
      if (started === "timeout") {
        const missing = procs.filter((p) => !ready.has(p.name)).map((p) => p.name);
        io.err(
          `geode up: ${missing.join(", ")} did not answer ${n.health("<service>")} within ${readyTimeoutMs} ms\n`,
        );
      } else if (started.kind === "exit") {
        io.err(
          `geode up: ${started.proc.name} exited (${started.code}) during start-up; its last output:\n` +
            started.proc
              .tail()
              .map((l) => `  ${l}\n`)
              .join(""),
        );
      }
      await stopAll(started === "timeout" || started.kind === "exit" ? "SIGTERM" : started.signal);
      if (typeof started === "object" && started.kind === "signal") {
        io.out("geode up: stopped\n");
        return 0;
      }
      return 1;
    }

    io.out(
      `\n${renderTable(
        ["service", "status", "version", "pid"],
        procs.map((p) => [
          p.name,
          ready.get(p.name)?.status ?? "",
          ready.get(p.name)?.version ?? "",
          String(p.child.pid),
        ]),
      )}\ngeode up: ready — ${procs.length} service(s) on ${plan.url}, namespace ${config.namespace}. Ctrl-C stops all.\n`,
    );

    const ended = await Promise.race([anyExit, stopSignal]);
    if (ended.kind === "exit") {
      io.err(`geode up: ${ended.proc.name} exited unexpectedly (${ended.code}); stopping the others\n`);
      await stopAll("SIGTERM");
      return 1;
    }
    io.out(`geode up: ${ended.signal} received, stopping ${procs.length} service(s)\n`);
    await stopAll(ended.signal);
    io.out("geode up: stopped\n");
    return 0;
  },
};
