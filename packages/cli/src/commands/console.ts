import { parseArgs } from "node:util";
import { connectBus, redactUrl } from "@geode/bus";
import { names as buildNames } from "@geode/contracts";
import { createLogger, type GeodeConfig, loadConfig } from "@geode/service";
import { type CommandIO, type CommandModule, intOption, UsageError } from "../command.js";
import { noPlaneFound, openExistingProjection } from "../projection-from-env.js";

/**
 * `geode console`: the operator console in the browser (sessions and their stories from the
 * projection, charts, approvals, paused sessions, admitted receipts, runs with live timelines,
 * handlers, recorder lag) on loopback, behind
 * `GEODE_CONSOLE_TOKEN`. Runs until SIGINT/SIGTERM.
 */
export const consoleCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({ args, options: { port: { type: "string" }, host: { type: "string" } } });
    const { CONSOLE_ENV, consoleTimeouts, DEFAULT_CONSOLE_PORT, startConsole } = await import(
      "@geode/console"
    );
    const port = intOption(values.port, "port", 0, 65_535) ?? DEFAULT_CONSOLE_PORT;
    const host = values.host ?? "127.0.0.1";
    if (!/^[0-9.]+$|^localhost$/.test(host))
      throw new UsageError(`--host must be an IPv4 address, got ${host}`);
    const config = loadConfig(io.env);
    const settings = CONSOLE_ENV.parse(io.env);
    const { token } = settings;
    if (!token) {
      io.err("GEODE_CONSOLE_TOKEN is not set: the console serves nothing without a token\n");
      return 2;
    }
    const log = createLogger("console", config.logLevel);
    const nc = await natsOrPlaneDown(config, { port, host }, io);
    if (!nc) return 0;
    // The session views read the projection (never migrating it: the recorder owns it), found
    // wherever the plane runs; without one the rest of the console still runs, and those views
    // say how to get one.
    let noProjection = `the console has no projection to read: ${noPlaneFound(config)}`;
    const projection = await openExistingProjection(
      config,
      "geode console",
      { env: io.env, err: () => undefined },
      false,
    ).catch((err: unknown) => {
      noProjection = `the projection is unavailable: ${err instanceof Error ? err.message : err}`;
      return undefined;
    });
    if (!projection) io.err(`geode console: no session views: ${noProjection}\n`);
    const running = await startConsole({
      conn: { nc, names: buildNames(config.namespace) },
      token,
      port,
      host,
      approvalTimeoutMs: config.approvalTimeoutMs,
      timeouts: consoleTimeouts(settings),
      log,
      ...(projection ? { projection: { db: projection.db, ns: projection.ns } } : { noProjection }),
    });
    io.out(`console on ${running.url} (namespace ${config.namespace})\n`);
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    await running.close();
    await projection?.close();
    await nc.drain();
    return 0;
  },
};

type Bus = Awaited<ReturnType<typeof connectBus>>;

/**
 * NATS, once it answers. Until then the console's address serves only what is down and how to
 * start it (page and every API route, 503), retrying every 2 s; undefined when stopped meanwhile.
 */
async function natsOrPlaneDown(
  config: GeodeConfig,
  at: { port: number; host: string },
  io: CommandIO,
): Promise<Bus | undefined> {
  const tryConnect = () => connectBus(config, "geode-console").catch(() => undefined);
  const first = await tryConnect();
  if (first) return first;
  const { startPlaneDownConsole } = await import("@geode/console");
  const message = `NATS at ${redactUrl(config.natsUrl, { maskUser: true })} is not reachable: start the plane with \`geode up\``;
  const down = await startPlaneDownConsole({ ...at, message });
  io.err(`geode console: ${message}; serving only that on ${down.url} until it answers\n`);
  let stopped = false;
  const stop = () => {
    stopped = true;
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    for (;;) {
      await new Promise((r) => setTimeout(r, 2_000));
      if (stopped) return undefined;
      const nc = await tryConnect();
      if (nc) {
        io.err(`geode console: NATS answers at ${redactUrl(config.natsUrl, { maskUser: true })}\n`);
        return nc;
      }
    }
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    await down.close();
  }
}
