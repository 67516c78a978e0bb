import { connectBus, type Responder, redactUrl } from "@geode/bus";
import { names as buildNames, type Names } from "@geode/contracts";
import { type GeodeConfig, type ServiceHealth, serveHealth } from "@geode/service";
import type { TelemetryConfig } from "@geode/telemetry";
import type { NatsConnection } from "@nats-io/transport-node";
import { type CommandIO, describeFailure } from "../command.js";
import { renderTable } from "../render-table.js";
import { provideDatabase, type UpDatabase } from "./embedded-database.js";
import type { NatsPlan } from "./ensure-nats.js";
import { type HealthProbe, probeHealth } from "./health-probe.js";
import { metricsPortOf, type ServiceEntry } from "./service-processes.js";
import { type RestartNotice, type RestartPolicy, ServiceSupervisor } from "./service-supervisor.js";

/** The name `geode up` answers health under: `{ns}.health.geode-up`. */
const UP_HEALTH_NAME = "geode-up";
const STOP_GRACE_MS = 15_000;
const COLORS = [36, 35, 33, 32, 34, 31];
/** How often a restarted service is asked whether it answers health again. */
const RECOVERY_PROBE_MS = 250;

/** Everything `geode up` runs, for the steps that start, watch and stop it. */
export interface UpPlane {
  readonly config: PlaneConfig;
  readonly names: Names;
  readonly nats: NatsPlan;
  readonly io: CommandIO;
  nc: NatsConnection | undefined;
  database: UpDatabase | undefined;
  /** The notary's key file, absolute (set when the notary is among the services). */
  auditKeyFile?: string;
  readonly supervisors: ServiceSupervisor[];
  /** Health answers at start-up, by service. */
  readonly ready: Map<string, HealthProbe>;
  /** Restarted services not yet answering health again: when they went down. */
  readonly recovering: Map<string, number>;
  health: Responder | undefined;
  recoveryTimer: ReturnType<typeof setInterval> | undefined;
}

/** What `geode up` reads: the common environment and the port its services' metrics start at. */
export type PlaneConfig = GeodeConfig & Pick<TelemetryConfig, "metricsPort">;

export function createPlane(config: PlaneConfig, nats: NatsPlan, io: CommandIO): UpPlane {
  return {
    config,
    names: buildNames(config.namespace),
    nats,
    io,
    nc: undefined,
    database: undefined,
    supervisors: [],
    ready: new Map(),
    recovering: new Map(),
    health: undefined,
    recoveryTimer: undefined,
  };
}

/** Connects to NATS (reconnecting for as long as `geode up` runs). */
export async function connectPlane(plane: UpPlane): Promise<string | undefined> {
  try {
    plane.nc = await connectBus({ ...plane.config, natsUrl: plane.nats.url }, "geode-up");
    return undefined;
  } catch (err) {
    return describeFailure(err);
  }
}

/** The projection database for the services (embedded PGlite served here when DATABASE_URL is unset). */
export async function openDatabase(plane: UpPlane, services: ServiceEntry[]): Promise<string | undefined> {
  try {
    plane.database = await provideDatabase(plane.config, services, plane.io.env);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

function restartLine(n: RestartNotice): string {
  const exit = typeof n.exit === "number" ? `code ${n.exit}` : `signal ${n.exit}`;
  const next = `restart ${n.attempt} in ${(n.delayMs / 1000).toFixed(1)} s`;
  const uptime = `${(n.uptimeMs / 1000).toFixed(1)} s`;
  if (n.crashLooping)
    return `geode up: ${n.service} keeps crashing (${exit} after ${uptime}; ${n.attempt} exits in a row); ${next}; the other services keep serving\n`;
  return `geode up: ${n.service} exited unexpectedly (${exit} after ${uptime}); ${next}\n`;
}

/** Starts every service under a supervisor, with the plane's NATS and database in their environment. */
export function spawnServices(
  plane: UpPlane,
  services: ServiceEntry[],
  policy?: Partial<RestartPolicy>,
): void {
  const { io, database } = plane;
  const env = {
    ...io.env,
    NATS_URL: plane.nats.url,
    ...(database?.url !== undefined ? { DATABASE_URL: database.url } : {}),
    ...(plane.auditKeyFile !== undefined ? { GEODE_AUDIT_KEY_FILE: plane.auditKeyFile } : {}),
  };
  const width = Math.max(...services.map((s) => s.name.length));
  const paint = (i: number, s: string) => (io.isTTY ? `\x1b[${COLORS[i % COLORS.length]}m${s}\x1b[0m` : s);
  const prefixOf = new Map(services.map((s, i) => [s.name, paint(i, s.name.padEnd(width))]));
  // Should `geode up` die, a nats-server it started stays up until the services have drained.
  const holdNats = (pid: number | undefined) => plane.nats.embedded?.holdFor(pid);
  for (const [i, s] of services.entries()) {
    const supervisor = new ServiceSupervisor(s, {
      env: { ...env, GEODE_METRICS_PORT: metricsPortOf(plane.config.metricsPort, i) },
      detached: true,
      ...(policy ? { policy } : {}),
      onLine: (name, line, stream) =>
        (stream === "stderr" ? io.err : io.out)(`${prefixOf.get(name)} | ${line}\n`),
      onRestart: (notice) => {
        if (!plane.recovering.has(notice.service)) plane.recovering.set(notice.service, Date.now());
        io.err(restartLine(notice));
      },
      onRespawn: (name, pid) => {
        holdNats(pid);
        io.out(`geode up: ${name} started again (pid ${pid ?? "?"})\n`);
      },
    });
    holdNats(supervisor.child.pid);
    plane.supervisors.push(supervisor);
  }
}

export type StartOutcome =
  | { kind: "ready" }
  | { kind: "timeout"; missing: string[] }
  | { kind: "exit"; supervisor: ServiceSupervisor; code: number | string }
  | { kind: "signal"; signal: NodeJS.Signals };

/** Waits until each service answers health, one exits, time runs out, or a stop signal comes. */
export async function awaitReady(
  plane: UpPlane,
  timeoutMs: number,
  stopRequested: Promise<NodeJS.Signals>,
): Promise<StartOutcome> {
  const { supervisors, ready } = plane;
  const deadline = Date.now() + timeoutMs;
  let waiting = true;
  const readiness = (async (): Promise<StartOutcome> => {
    while (waiting && ready.size < supervisors.length) {
      if (Date.now() > deadline)
        return { kind: "timeout", missing: supervisors.filter((s) => !ready.has(s.name)).map((s) => s.name) };
      const nc = plane.nc as NatsConnection;
      const probes = await Promise.all(
        supervisors.filter((s) => !ready.has(s.name)).map((s) => probeHealth(nc, plane.names, s.name, 1_000)),
      );
      for (const p of probes) if (p.status !== "down") ready.set(p.service, p);
      if (ready.size < supervisors.length) await new Promise((r) => setTimeout(r, 200));
    }
    return { kind: "ready" };
  })();
  // Until ready, an exit is a start-up failure (a bad setting, a missing table): not restarted.
  const anyExit = Promise.race(
    supervisors.map((supervisor) =>
      supervisor.startupExit.then((code): StartOutcome => ({ kind: "exit", supervisor, code })),
    ),
  );
  const signalled = stopRequested.then((signal): StartOutcome => ({ kind: "signal", signal }));
  const outcome = await Promise.race([readiness, anyExit, signalled]);
  waiting = false;
  return outcome;
}

/** Says why start-up failed, in one or a few lines. */
export function reportStartFailure(plane: UpPlane, outcome: StartOutcome, timeoutMs: number): void {
  const { io, names } = plane;
  if (outcome.kind === "timeout")
    io.err(
      `geode up: ${outcome.missing.join(", ")} did not answer ${names.health("<service>")} within ${timeoutMs} ms\n`,
    );
  else if (outcome.kind === "exit")
    io.err(
      `geode up: ${outcome.supervisor.name} exited (${outcome.code}) during start-up; its last output:\n` +
        outcome.supervisor.process
          .tail()
          .map((l) => `  ${l}\n`)
          .join(""),
    );
}

/** The ready table and the one line that says the plane is up. */
export function printReady(plane: UpPlane): void {
  const { io, ready, supervisors, config } = plane;
  const rows = supervisors.map((s) => [
    s.name,
    ready.get(s.name)?.status ?? "",
    ready.get(s.name)?.version ?? "",
    String(s.child.pid),
    ready.get(s.name)?.metrics_url ?? "off",
  ]);
  io.out(
    `\n${renderTable(["service", "status", "version", "pid", "metrics"], rows)}\ngeode up: ready — ${supervisors.length} ` +
      `service(s) on ${redactUrl(plane.nats.url, { maskUser: true })}, namespace ${config.namespace}. Ctrl-C stops all.\n`,
  );
}

/** `degraded` while a service is restarting or keeps crashing, with which and why. */
function planeHealth(plane: UpPlane): ServiceHealth {
  const troubled = plane.supervisors.filter((s) => s.state !== "running");
  if (troubled.length === 0) return { status: "ok" };
  const reason = troubled
    .map((s) => `${s.name} ${s.state} (last exit ${s.lastExit?.exit ?? "?"}, ${s.restartCount} restart(s))`)
    .join("; ");
  return { status: "degraded", reason };
}

/**
 * From here on, services that exit are restarted; `geode up` answers `{ns}.health.geode-up`, and
 * says when a restarted service answers health again (and how long it was away).
 */
export function superviseServices(plane: UpPlane): void {
  for (const s of plane.supervisors) s.supervise();
  const nc = plane.nc as NatsConnection;
  plane.health = serveHealth(nc, plane.names, UP_HEALTH_NAME, () => planeHealth(plane));
  let probing = false;
  plane.recoveryTimer = setInterval(() => {
    if (probing || plane.recovering.size === 0) return;
    probing = true;
    void (async () => {
      for (const [service, downSince] of [...plane.recovering]) {
        const sup = plane.supervisors.find((s) => s.name === service);
        if (sup?.state === "restarting" || sup?.state === "crash-looping") continue;
        const probe = await probeHealth(nc, plane.names, service, 1_000);
        if (probe.status === "down") continue;
        plane.recovering.delete(service);
        plane.io.out(
          `geode up: ${service} answers health again (${((Date.now() - downSince) / 1000).toFixed(1)} s after it exited)\n`,
        );
      }
    })().finally(() => {
      probing = false;
    });
  }, RECOVERY_PROBE_MS);
}

/**
 * The order services stop in: the reverse of start, except the activity-recorder last, so it
 * still records what the others publish while they drain.
 */
function stopOrder(supervisors: ServiceSupervisor[]): ServiceSupervisor[] {
  const reversed = [...supervisors].reverse();
  return [
    ...reversed.filter((s) => s.name !== "activity-recorder"),
    ...reversed.filter((s) => s.name === "activity-recorder"),
  ];
}

/** Stops every service one after the other (SIGKILL for one that outlives the grace), then NATS. */
export async function stopPlane(plane: UpPlane, signal: NodeJS.Signals): Promise<void> {
  if (plane.recoveryTimer !== undefined) clearInterval(plane.recoveryTimer);
  await plane.health?.drain().catch(() => undefined);
  const deadline = Date.now() + STOP_GRACE_MS;
  for (const s of stopOrder(plane.supervisors)) await s.stop(signal, Math.max(1_000, deadline - Date.now()));
  if (plane.nc && !plane.nc.isClosed()) await plane.nc.close().catch(() => undefined);
  await plane.database?.close().catch(() => undefined);
  await plane.nats.embedded?.stop();
}
