import {
  assertReplicasFit,
  type BusInterceptor,
  connectBus,
  type GeodeConnection,
  type InterceptedConnection,
  type Logger,
  type NatsConnection,
  type Responder,
  serveRequests,
} from "@geode/bus";
import { names as buildNames, HealthLeg, type HealthReply, type Names } from "@geode/contracts";
import { ConfigError, type EnvSpec } from "@geode/env";
import { type GeodeConfig, loadConfig } from "./config.js";
import { createLogger } from "./logger.js";
import { NO_OBSERVER, type ServiceObserver } from "./service-observer.js";
import { supervisorGone } from "./supervisor-channel.js";

export const GEODE_VERSION = "0.1.0";

/** A service's own view of its health: `degraded` says why in `reason`; `note`, what to look at. */
export interface ServiceHealth {
  status: HealthReply["status"];
  reason?: string | undefined;
  note?: string | undefined;
  /** The mcp-bridge's upstream servers (`HealthReply.servers`); absent for every other service. */
  servers?: HealthReply["servers"];
  /** The notary's lease and logs (`HealthReply.audit`); absent for every other service. */
  audit?: HealthReply["audit"];
}

/**
 * Answers `{ns}.health.{service}` with `{service, status, version, started_at, metrics_url}`,
 * plus `reason` while the service is degraded and `note` when it has one.
 */
export function serveHealth(
  nc: NatsConnection | InterceptedConnection,
  n: Names,
  service: string,
  health: () => ServiceHealth | HealthReply["status"] = () => "ok",
  options: { metricsUrl?: string | null } = {},
): Responder {
  const startedAt = Date.now();
  return serveRequests(nc, n.health(service), { request: HealthLeg.request }, (): HealthReply => {
    const h = health();
    const { status, reason, note, servers, audit } =
      typeof h === "string"
        ? { status: h, reason: undefined, note: undefined, servers: undefined, audit: undefined }
        : h;
    return {
      service,
      status,
      version: GEODE_VERSION,
      started_at: startedAt,
      metrics_url: options.metricsUrl ?? null,
      ...(status === "degraded" && reason ? { reason } : {}),
      ...(note ? { note } : {}),
      ...(servers ? { servers } : {}),
      ...(audit ? { audit } : {}),
    };
  });
}

export interface ServiceContext<S = unknown> {
  config: GeodeConfig;
  /** The service's own settings, read with its `EnvSpec` (see `runService`). */
  settings: S;
  /** The bare connection, for JetStream and KV. */
  nc: NatsConnection;
  /**
   * The same connection with the service's interceptors (its telemetry's, then `runService`'s
   * `interceptors`): what its requests, served requests and event publishers are given.
   */
  bus: GeodeConnection;
  /** Where the service's own stage spans and figures go (its telemetry's; `NO_OBSERVER` without). */
  observer: ServiceObserver;
  names: Names;
  log: Logger;
}

export interface RunningService {
  /** Stops taking work, finishes what is in flight. */
  stop(): Promise<void>;
  /** What health answers (default: ok). */
  health?(): ServiceHealth;
}

/**
 * How a service is observed (`@geode/telemetry`'s `serviceTelemetry`): started before the service
 * connects, so its first calls are counted; it never stops the service (what it cannot start, it
 * logs and leaves off).
 */
export interface ServiceTelemetry<T = unknown> {
  /** Its own settings, read with the service's (a bad value exits 2 as theirs does). */
  readonly env: EnvSpec<T>;
  start(service: { name: string; version: string; settings: T; log: Logger }): Promise<StartedTelemetry>;
}

export interface StartedTelemetry {
  /** What the health reply's `metrics_url` says (null: no metrics served). */
  readonly metricsUrl: string | null;
  /** What the service reports through `ServiceContext.observer`. */
  readonly observer: ServiceObserver;
  /** The interceptors of the service's connection (outermost of `ServiceContext.bus`), once it is up. */
  attach(nc: NatsConnection, names: Names): readonly BusInterceptor[];
  /** Flushes what it holds and stops, after the service drained. */
  stop(): Promise<void>;
}

/** What `runService` is told besides the service's start. */
export interface RunServiceOptions<S, T = unknown> {
  /** The service's own settings (`services/<name>/src/*-config.ts`). */
  env?: EnvSpec<S>;
  /** Its metrics and traces: `serviceTelemetry` of `@geode/telemetry`; none without. */
  telemetry?: ServiceTelemetry<T>;
  /** Around the service's doors, inside its telemetry's (see `ServiceContext.bus`). */
  interceptors?: readonly BusInterceptor[];
}

/**
 * A dependency that failed at start-up (NATS, the database): one fatal line with what failed and
 * what to do, no stack (the errors of the bus and the projection already name the URL without its
 * password); exit 1.
 */
function exitOnStartFailure(log: Logger, err: unknown): never {
  const hint = (err as { hint?: unknown }).hint;
  const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
  log.fatal(typeof hint === "string" ? { hint } : {}, message);
  process.exit(1);
}

/**
 * The whole life of a service process: read the common environment and the service's own (`env`:
 * its spec in `services/<name>/src/*-config.ts`; a bad value exits 2 with one message naming every
 * bad variable), connect, start, answer health, and drain on SIGTERM/SIGINT, or by itself when
 * the supervisor that started it with an IPC channel (`geode up`) is gone.
 */
export async function runService<S = undefined, T = unknown>(
  service: string,
  options: RunServiceOptions<S, T>,
  start: (ctx: ServiceContext<S>) => Promise<RunningService>,
): Promise<void> {
  let config: GeodeConfig;
  let settings: S;
  let telemetrySettings: T | undefined;
  try {
    config = loadConfig();
    settings = options.env ? options.env.parse(process.env) : (undefined as S);
    telemetrySettings = options.telemetry?.env.parse(process.env);
  } catch (err) {
    process.stderr.write(`${service}: ${err instanceof ConfigError ? err.message : String(err)}\n`);
    process.exit(2);
  }
  // Watched from the start: a supervisor that dies while this process starts is noticed too.
  const supervisor = supervisorGone(config.shutdownTimeoutMs);
  const log = createLogger(service, config.logLevel);
  const telemetry = await options.telemetry?.start({
    name: service,
    version: GEODE_VERSION,
    settings: telemetrySettings as T,
    log,
  });
  let nc: NatsConnection;
  try {
    nc = await connectBus(config, service);
  } catch (err) {
    exitOnStartFailure(log, err);
  }
  try {
    assertReplicasFit(nc, config.streamReplicas, config.natsUrl);
  } catch (err) {
    process.stderr.write(`${service}: ${err instanceof Error ? err.message : String(err)}\n`);
    log.fatal({ replicas: config.streamReplicas }, err instanceof Error ? err.message : String(err));
    process.exit(2);
  }
  // What an operator sees when a NATS node goes away: one line when the connection is lost, one
  // when the client is on another node (it retries forever; in-flight requests fail with coded errors).
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") log.warn({ server: s.server }, "NATS connection lost; reconnecting");
      else if (s.type === "reconnect") log.info({ server: s.server }, "NATS reconnected");
    }
  })().catch(() => undefined);
  const n = buildNames(config.namespace);
  const bus: GeodeConnection = {
    nc,
    names: n,
    interceptors: [...(telemetry?.attach(nc, n) ?? []), ...(options.interceptors ?? [])],
  };
  let running: RunningService;
  try {
    running = await start({
      config,
      settings,
      nc,
      bus,
      observer: telemetry?.observer ?? NO_OBSERVER,
      names: n,
      log,
    });
  } catch (err) {
    exitOnStartFailure(log, err);
  }
  const health = serveHealth(bus, n, service, () => running.health?.() ?? "ok", {
    metricsUrl: telemetry?.metricsUrl ?? null,
  });
  // Before "started": whoever reads that line may stop the service at once.
  drainOnStop(service, log, { supervisor, deadlineMs: config.shutdownTimeoutMs }, [
    () => health.drain(),
    () => running.stop(),
    () => nc.drain(),
    () => telemetry?.stop(),
  ]);
  // "started" means health answers: the subscription has reached the server.
  await nc.flush();
  log.info(
    { namespace: config.namespace, version: GEODE_VERSION, metrics_url: telemetry?.metricsUrl ?? null },
    `${service} started`,
  );
}

/**
 * Drains on SIGTERM/SIGINT, and when the supervisor that started this process is gone (see
 * `supervisorGone`): each step in order (the first error is logged and ends the drain), then exit 0.
 * A drain has a deadline (`GEODE_SHUTDOWN_TIMEOUT_MS`): a step that never ends (draining into a
 * NATS that is gone, a database that does not answer) would otherwise hold the process for good,
 * deaf to every further SIGTERM. Past it, or at a second SIGTERM/SIGINT, the process exits 1.
 */
function drainOnStop(
  service: string,
  log: Logger,
  options: { supervisor: Promise<void> | undefined; deadlineMs: number },
  steps: ReadonlyArray<() => Promise<unknown> | undefined>,
): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      if (signal === "supervisor-gone") return;
      log.warn({ signal }, `${service}: ${signal} again while draining; exiting now`);
      process.exit(1);
    }
    stopping = true;
    log.info({ signal, deadline_ms: options.deadlineMs }, `${service} draining`);
    setTimeout(() => {
      log.error(
        { deadline_ms: options.deadlineMs },
        `${service} did not finish draining within ${options.deadlineMs} ms; exiting`,
      );
      process.exit(1);
    }, options.deadlineMs);
    try {
      for (const step of steps) await step();
    } catch (err) {
      log.error({ err }, "error while draining");
    }
    log.info(`${service} stopped`);
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  void options.supervisor?.then(() => {
    log.warn(`${service}: the process that started it is gone; draining`);
    void shutdown("supervisor-gone");
  });
}
