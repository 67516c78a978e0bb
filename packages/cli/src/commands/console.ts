import { parseArgs } from "node:util";
import { connectBus, createLogger, loadConfig } from "@geode/bus";
import { names as buildNames } from "@geode/contracts";
import { type CommandModule, intOption, UsageError } from "../command.js";
import { openProjectionFromEnv, projectionHere } from "../projection-from-env.js";

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
    let nc: Awaited<ReturnType<typeof connectBus>>;
    try {
      nc = await connectBus(config, "geode-console");
    } catch (err) {
      io.err(`cannot connect to NATS at ${config.natsUrl}: ${err instanceof Error ? err.message : err}\n`);
      return 1;
    }
    const log = createLogger("console", config.logLevel);
    // The session views read the projection (never migrating it: the recorder owns it); without
    // one here the rest of the console still runs.
    let projection: Awaited<ReturnType<typeof openProjectionFromEnv>> | undefined;
    if (!projectionHere(config))
      io.err("geode console: no session views: DATABASE_URL is unset and there is no projection here\n");
    else
      projection = await openProjectionFromEnv(config, "geode console", false).catch((err: unknown) => {
        io.err(`geode console: no session views: ${err instanceof Error ? err.message : err}\n`);
        return undefined;
      });
    const running = await startConsole({
      conn: { nc, names: buildNames(config.namespace) },
      token,
      port,
      host,
      approvalTimeoutMs: config.approvalTimeoutMs,
      timeouts: consoleTimeouts(settings),
      log,
      ...(projection ? { projection: { db: projection.db, ns: projection.ns } } : {}),
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
