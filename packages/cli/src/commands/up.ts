import { parseArgs } from "node:util";
import { redactUrl } from "@geode/bus";
import { ConfigError } from "@geode/env";
import { loadConfig } from "@geode/service";
import { TELEMETRY_ENV } from "@geode/telemetry";
import { type CommandIO, type CommandModule, intOption, UsageError } from "../command.js";
import { ensureAuditKey } from "../up/audit-key.js";
import { ensureNats } from "../up/ensure-nats.js";
import { discoverServices, type ServiceEntry } from "../up/service-processes.js";
import {
  awaitReady,
  connectPlane,
  createPlane,
  openDatabase,
  type PlaneConfig,
  printReady,
  reportStartFailure,
  spawnServices,
  stopPlane,
  superviseServices,
  type UpPlane,
} from "../up/up-plane.js";

const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

interface UpOptions {
  only: string[] | undefined;
  readyTimeoutMs: number;
}

function parseUpOptions(args: string[]): UpOptions {
  const { values } = parseArgs({
    args,
    options: { only: { type: "string" }, "ready-timeout": { type: "string", default: "60000" } },
  });
  return {
    only: values.only?.split(",").map((s) => s.trim()),
    readyTimeoutMs: intOption(values["ready-timeout"], "ready-timeout") ?? 60_000,
  };
}

function readConfig(io: CommandIO): PlaneConfig | number {
  try {
    // The services' telemetry settings too: `geode up` hands each its metrics port.
    return { ...loadConfig(io.env), ...TELEMETRY_ENV.parse(io.env) };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.err(`geode up: ${err.message}\n`);
    return 2;
  }
}

/** The services under services/*, or the `--only` ones. */
function selectServices(only: string[] | undefined): ServiceEntry[] {
  const services = discoverServices();
  if (only === undefined) return services;
  const unknown = only.filter((w) => !services.some((s) => s.name === w));
  if (unknown.length > 0)
    throw new UsageError(
      `unknown service: ${unknown.join(", ")} (found: ${services.map((s) => s.name).join(", ")})`,
    );
  return services.filter((s) => only.includes(s.name));
}

/** Listens for SIGINT/SIGTERM/SIGHUP from the start, so a Ctrl-C during start-up stops what runs. */
function listenForStop(): { requested: Promise<NodeJS.Signals>; dispose(): void } {
  let onStop: (signal: NodeJS.Signals) => void = () => undefined;
  const requested = new Promise<NodeJS.Signals>((resolve) => {
    onStop = resolve;
  });
  const onSignal = (signal: NodeJS.Signals) => onStop(signal);
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  const dispose = () => {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
  };
  return { requested, dispose };
}

/** NATS connection, projection database, then every service: an error message, or undefined. */
async function startPlane(plane: UpPlane, services: ServiceEntry[]): Promise<string | undefined> {
  const failed = (await connectPlane(plane)) ?? (await openDatabase(plane, services));
  if (failed !== undefined) return failed;
  const { config, nats, database, io } = plane;
  io.out(
    `geode up: namespace ${config.namespace}, NATS ${redactUrl(nats.url, { maskUser: true })}${nats.embedded ? " (embedded)" : ""}, ` +
      `database ${database?.label}\n`,
  );
  if (services.some((s) => s.name === "notary")) {
    // The notary signs with this key; the first start makes one, whose verifier key is shown once.
    const key = ensureAuditKey(io.env);
    if (key.madeVerifierKey !== undefined)
      io.out(`geode up: made the audit signing key ${key.file}; its verifier key: ${key.madeVerifierKey}\n`);
    plane.auditKeyFile = key.file;
  }
  spawnServices(plane, services);
  return undefined;
}

/** Start-up to ready, then supervision until a stop signal; the exit code. */
async function runPlane(
  plane: UpPlane,
  services: ServiceEntry[],
  options: UpOptions,
  stop: Promise<NodeJS.Signals>,
) {
  const failed = await startPlane(plane, services);
  if (failed !== undefined) {
    plane.io.err(`geode up: ${failed}\n`);
    await stopPlane(plane, "SIGTERM");
    return 1;
  }
  const started = await awaitReady(plane, options.readyTimeoutMs, stop);
  if (started.kind !== "ready") {
    reportStartFailure(plane, started, options.readyTimeoutMs);
    await stopPlane(plane, started.kind === "signal" ? started.signal : "SIGTERM");
    if (started.kind !== "signal") return 1;
    plane.io.out("geode up: stopped\n");
    return 0;
  }
  printReady(plane);
  superviseServices(plane);
  const signal = await stop;
  plane.io.out(`geode up: ${signal} received, stopping ${plane.supervisors.length} service(s)\n`);
  await stopPlane(plane, signal === "SIGHUP" ? "SIGTERM" : signal);
  plane.io.out("geode up: stopped\n");
  return 0;
}

/**
 * `geode up`: every service under services/*, one foreground process tree, prefixed human log
 * lines, a ready table once each answers health; a service that exits later is restarted with
 * backoff; SIGINT/SIGTERM stops all, in order.
 */
export const upCommand: CommandModule = {
  async run(args, io) {
    const options = parseUpOptions(args);
    const config = readConfig(io);
    if (typeof config === "number") return config;
    const services = selectServices(options.only);
    if (services.length === 0) {
      io.err("geode up: no services found (services/<name>/src/main.ts)\n");
      return 1;
    }
    const stop = listenForStop();
    try {
      const nats = await ensureNats(config, io);
      if (typeof nats === "number") return nats;
      return await runPlane(createPlane(config, nats, io), services, options, stop.requested);
    } finally {
      stop.dispose();
    }
  },
};
