import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { connectGeode, type GeodeConnection, NatsUnavailableError } from "@geode/bus";
import { names as buildNames, HOOK_NAMES, RECORDER_CONSUMER } from "@geode/contracts";
import { findNatsServerBinary, freePort, portOpen } from "@geode/local-server";
import {
  openProjectionDb,
  type ProjectionDb,
  type ServedEmbeddedDatabase,
  serveEmbeddedDatabase,
} from "@geode/projection";
import { loadConfig } from "@geode/service";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { natsNamespaces } from "../namespaces/namespace-inventory.js";
import { type NamespaceRemoval, removeNamespace } from "../namespaces/remove-namespace.js";
import { ensureAuditKey } from "../up/audit-key.js";
import { probeHealth } from "../up/health-probe.js";
import { type NatsServerProcess, startNatsServer } from "../up/nats-server.js";
import { demoExampleModule, demoExampleNodeArgs } from "../up/node-entry.js";
import {
  discoverServices,
  metricsPortOf,
  REPO_ROOT,
  type ServiceProcess,
  spawnServiceProcess,
} from "../up/service-processes.js";
import { awaitCheckpoints, type DemoAudit, verifyDemoAudit } from "./demo-audit.js";
import { type DemoSessionResult, parseDemoResult } from "./demo-result.js";

const DEFAULT_NATS_PORT = 4222;
const DEFAULT_NATS_URL = `nats://127.0.0.1:${DEFAULT_NATS_PORT}`;
/** The demo's notary signs this often, so its checkpoint covers the run soon after the session. */
const DEMO_CHECKPOINT_MS = "500";
/** How long the demo waits for the notary's checkpoints to cover the run. */
const CHECKPOINT_WAIT_MS = 30_000;
const JOIN_POINTS = ["tool_request", "tool_execution", "llm_request", "llm_execution"] as const;
/** The example handlers and the remote tool, each in its own process. */
const HANDLER_SCRIPTS = [
  "policy-guard",
  "redaction-check",
  "ci-evaluator",
  "observer",
  "approver",
  "shell-tool",
] as const;

export interface DemoOptions {
  natsUrl?: string | undefined;
  /** PostgreSQL URL; unset means the embedded PGlite under `.geode/pgdata`. */
  databaseUrl?: string | undefined;
  /** Default: a fresh `demo_<time>` namespace, so every run starts clean. */
  namespace?: string;
  runsDir?: string;
  /** Progress lines (stderr in the CLI). */
  progress?: (line: string) => void;
  /** Environment passed on to the child processes. */
  env?: NodeJS.ProcessEnv;
  /** Keep the namespace (streams, buckets, schema, run files) at the end. Default: removed. */
  keep?: boolean;
}

interface SurfaceRow {
  surface: string;
  name: string;
  extensions: string[];
  calls: number;
  statuses: Record<string, number>;
  medianMs: number;
}

export interface DemoResult {
  namespace: string;
  natsUrl: string;
  database: "postgres" | "pglite";
  session: DemoSessionResult;
  /** One row per hook and join point, from the Postgres projection (extension_invocations). */
  surfaces: SurfaceRow[];
  /** The run's `activity_events` rows: what the recorder mirrors to the run's events.jsonl. */
  postgresRows: number;
  jsonlRows: number;
  jsonlFile: string;
  /** `tool_exec_started` rows of the mutation's operation: the replay must not add one. */
  writeExecutions: number;
  /** The run's audit logs checked as `geode audit verify --projection` checks them. */
  audit: DemoAudit;
  /** What was removed at the end (undefined when the namespace was kept). */
  removed: NamespaceRemoval | undefined;
  seconds: number;
}

/** The credentials of `NATS_USER`/`NATS_PASS` or `NATS_TOKEN`, as connect options. */
type NatsAuth = { user?: string; pass?: string; token?: string };

function natsAuth(env: NodeJS.ProcessEnv): NatsAuth {
  const c = loadConfig(env);
  const auth: NatsAuth = {};
  if (c.natsUser !== undefined && c.natsPass !== undefined) {
    auth.user = c.natsUser;
    auth.pass = c.natsPass;
  }
  if (c.natsToken !== undefined) auth.token = c.natsToken;
  return auth;
}

/** Undefined when a NATS answers at `url` and lets `auth` in, else why not. */
async function natsDown(url: string, auth: NatsAuth): Promise<unknown> {
  try {
    const nc = await connect({
      servers: url.split(",").map((s) => s.trim()),
      timeout: 1_500,
      reconnect: false,
      ...auth,
    });
    await nc.close();
    return undefined;
  } catch (err) {
    return err;
  }
}

/**
 * The NATS the demo uses: NATS_URL when it is set (and it must answer: no silent server of our
 * own elsewhere); unset, the default one, or when nothing answers there a nats-server started on
 * the default port with `geode up`'s store, so the printed commands find the same data later.
 */
async function demoNats(
  natsUrl: string | undefined,
  env: NodeJS.ProcessEnv,
  progress: (line: string) => void,
): Promise<{ url: string; server: NatsServerProcess | undefined }> {
  const url = natsUrl ?? DEFAULT_NATS_URL;
  const down = await natsDown(url, natsAuth(env));
  if (down === undefined) return { url, server: undefined };
  if (natsUrl !== undefined) throw new NatsUnavailableError(url, down);
  if (!findNatsServerBinary(env)) {
    throw new Error(
      `no NATS at ${url}. Install Debian's nats-server package (then the demo starts one itself), or run 'docker compose up nats'.`,
    );
  }
  const port = (await portOpen(DEFAULT_NATS_PORT)) ? await freePort() : DEFAULT_NATS_PORT;
  // Tethered: should the demo die, the server stops once the services have drained into it.
  const server = await startNatsServer({ port, storeDir: path.resolve(".geode/nats"), tethered: true });
  progress(`no NATS at ${url}; started nats-server with JetStream on ${server.url} (stopped at the end)`);
  return { url: server.url, server };
}

function exampleProcess(script: string, env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, demoExampleNodeArgs(path.join(REPO_ROOT, "examples/demo", `${script}.ts`)), {
    cwd: REPO_ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/**
 * The demo's runtime (`examples/demo/session.ts`) as its own process, like the handlers: its
 * story lines go to `progress` as they come, its result is the last line of its stdout.
 */
async function runSessionProcess(
  env: NodeJS.ProcessEnv,
  progress: (line: string) => void,
): Promise<DemoSessionResult> {
  const child = exampleProcess("session", env);
  let out = "";
  let err = "";
  child.stdout?.on("data", (b: Buffer) => {
    out += b.toString("utf8");
  });
  child.stderr?.on("data", (b: Buffer) => {
    const text = b.toString("utf8");
    err += text;
    for (const line of text.split("\n")) if (line.trim() !== "") progress(line);
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`the demo session exited (${code}):\n${err.slice(-4_000)}`);
  return parseDemoResult(out);
}

function spawnExample(
  script: string,
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; ready: Promise<void>; output: () => string } {
  const child = exampleProcess(script, env);
  let out = "";
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start:\n${out}`)), 90_000);
    const onData = (b: Buffer) => {
      out += b.toString("utf8");
      if (out.includes(" ready")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited (${code}) before it was ready:\n${out}`));
    });
  });
  return { child, ready, output: () => out };
}

async function stopChild(child: ChildProcess, timeoutMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  await exited;
  clearTimeout(timer);
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.floor((s.length - 1) / 2)]!;
}

/** What one demo run works with, from its options and environment. */
interface DemoContext {
  ns: string;
  runsDir: string;
  natsSet: string | undefined;
  databaseUrl: string | undefined;
  pgliteDir: string;
  baseEnv: NodeJS.ProcessEnv;
  progress: (line: string) => void;
  keep: boolean;
  /** The notary's key file, or why the demo runs no notary. */
  audit: { keyFile: string } | { skipped: string };
  t0: number;
}

/**
 * The notary signs with `geode up`'s key (GEODE_AUDIT_KEY_FILE, default `.geode/audit.key`, made
 * when missing), so a kept demo verifies later with a plain `geode audit verify`. Connected with
 * credentials, the demo runs no notary: its processes all connect as that one user, and only the
 * notary's own user may publish checkpoints.
 */
function demoAuditPlan(ctx: DemoContext): DemoContext["audit"] {
  const auth = natsAuth(ctx.baseEnv);
  if (auth.user !== undefined || auth.token !== undefined)
    return {
      skipped: `the demo connects to NATS as ${auth.user ?? "a token's user"}, and only the notary's own NATS user may publish checkpoints`,
    };
  const key = ensureAuditKey(ctx.baseEnv);
  if (key.madeVerifierKey !== undefined)
    ctx.progress(`made the audit signing key ${key.file}; its verifier key: ${key.madeVerifierKey}`);
  return { keyFile: key.file };
}

function demoContext(options: DemoOptions): DemoContext {
  const baseEnv = options.env ?? process.env;
  return {
    ns: options.namespace ?? `demo_${Date.now().toString(36)}`,
    runsDir: path.resolve(options.runsDir ?? baseEnv["GEODE_RUNS_DIR"] ?? ".geode/runs"),
    natsSet: options.natsUrl ?? (baseEnv["NATS_URL"] || undefined),
    databaseUrl: options.databaseUrl ?? (baseEnv["DATABASE_URL"] || undefined),
    pgliteDir: path.resolve(".geode/pgdata"),
    baseEnv,
    progress: options.progress ?? (() => undefined),
    keep: options.keep ?? false,
    audit: { skipped: "not started" },
    t0: Date.now(),
  };
}

/**
 * The environment of every process of the demo: its NATS, namespace, database (`databaseUrl`, the
 * embedded one served here when DATABASE_URL is unset), examples and the notary's key.
 */
function demoEnv(ctx: DemoContext, natsUrl: string, databaseUrl: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...ctx.baseEnv,
    NATS_URL: natsUrl,
    GEODE_NAMESPACE: ctx.ns,
    GEODE_RUNS_DIR: ctx.runsDir,
    GEODE_TOOL_ROOT: path.resolve(".geode/demo-files"),
    GEODE_TOOL_MIDDLEWARE: demoExampleModule(path.join(REPO_ROOT, "examples/demo/tool-middleware.ts")),
    GEODE_APPROVAL_TIMEOUT_MS: "10000",
    GEODE_AUDIT_CHECKPOINT_MS: DEMO_CHECKPOINT_MS,
    LOG_LEVEL: ctx.baseEnv["LOG_LEVEL"] ?? "warn",
    DATABASE_URL: databaseUrl,
  };
  if ("keyFile" in ctx.audit) env["GEODE_AUDIT_KEY_FILE"] = ctx.audit.keyFile;
  return env;
}

/** The processes a demo started, stopped at its end whatever happened. */
interface DemoProcesses {
  nats: NatsServerProcess | undefined;
  /** The embedded PGlite served to the services (DATABASE_URL unset): they all share it. */
  database: ServedEmbeddedDatabase | undefined;
  services: ServiceProcess[];
  examples: ChildProcess[];
}

/**
 * The metrics port of the demo's i-th service: off unless `GEODE_METRICS_PORT` is set (a running
 * `geode up` holds the default ports, and nobody scrapes a demo), else consecutive from it as under
 * `geode up`. A value that is not a port goes to the services as it is: they say what is wrong.
 */
export function demoMetricsPort(env: NodeJS.ProcessEnv, i: number): string {
  const raw = env["GEODE_METRICS_PORT"]?.trim() ?? "";
  if (raw === "") return "0";
  return /^\d+$/.test(raw) ? metricsPortOf(Number(raw), i) : raw;
}

/**
 * The plane's services but the agent gateway (the scripted session is the demo's runtime, and the
 * gateway's HTTP port may already be bound by a running `geode up`), and the notary only when the
 * demo has its key.
 */
function startServices(procs: DemoProcesses, env: NodeJS.ProcessEnv, ctx: DemoContext): void {
  const { progress } = ctx;
  const services = discoverServices().filter(
    (d) => d.name !== "agent-gateway" && (d.name !== "notary" || "keyFile" in ctx.audit),
  );
  for (const [i, s] of services.entries()) {
    const serviceEnv = { ...env, GEODE_METRICS_PORT: demoMetricsPort(env, i) };
    const proc = spawnServiceProcess(s, serviceEnv, (name, line) => progress(`[${name}] ${line}`));
    procs.nats?.holdFor(proc.child.pid);
    procs.services.push(proc);
  }
}

async function waitHealthy(conn: GeodeConnection, services: ServiceProcess[]): Promise<void> {
  for (const s of services) {
    for (let i = 0; ; i++) {
      const h = await probeHealth(conn.nc, conn.names, s.name, 500);
      if (h.status === "ok") break;
      if (i > 120) throw new Error(`${s.name} did not become healthy:\n${s.tail().join("\n")}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

async function startExamples(procs: DemoProcesses, env: NodeJS.ProcessEnv): Promise<void> {
  const started = HANDLER_SCRIPTS.map((script) => spawnExample(script, env));
  procs.examples.push(...started.map((s) => s.child));
  await Promise.all(started.map((s) => s.ready));
}

/** Until the recorder's consumers have nothing pending or unacknowledged on either stream. */
async function waitForRecorder(conn: GeodeConnection): Promise<void> {
  const n = conn.names;
  const jsm = await jetstreamManager(conn.nc, { checkAPI: false });
  for (let i = 0; ; i++) {
    const infos = await Promise.all(
      [n.eventsStream, n.timelineStream].map((s) =>
        jsm.consumers.info(s, RECORDER_CONSUMER).catch(() => null),
      ),
    );
    if (infos.every((c) => c !== null && c.num_pending === 0 && c.num_ack_pending === 0)) return;
    if (i > 400) throw new Error("the activity-recorder did not catch up");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Examples first, then the services in reverse; at the end the database and NATS the demo started. */
async function stopProcesses(procs: DemoProcesses, end: boolean): Promise<void> {
  for (const c of procs.examples.splice(0)) await stopChild(c).catch(() => undefined);
  for (const s of procs.services.splice(0).reverse()) await stopChild(s.child).catch(() => undefined);
  if (!end) return;
  await procs.database?.close().catch(() => undefined);
  await procs.nats?.stop();
}

/** The session against the running plane: handlers up, the story played, the recorder caught up. */
async function playSession(ctx: DemoContext, env: NodeJS.ProcessEnv, procs: DemoProcesses, natsUrl: string) {
  const conn = await connectGeode({
    natsUrl,
    namespace: ctx.ns,
    name: "demo-runtime",
    ...natsAuth(ctx.baseEnv),
  });
  try {
    await waitHealthy(conn, procs.services);
    ctx.progress("services healthy; starting the example handlers");
    await startExamples(procs, env);
    const session = await runSessionProcess(env, ctx.progress);
    ctx.progress("waiting for the activity-recorder to catch up");
    await waitForRecorder(conn);
    return session;
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/**
 * The projection database of the demo: DATABASE_URL, or the embedded PGlite in `.geode/pgdata`
 * served on loopback for the run, so the recorder, the notary and the demo itself share it (as
 * under `geode up`: no second process opens the folder).
 */
async function demoDatabase(ctx: DemoContext, procs: DemoProcesses): Promise<string> {
  if (ctx.databaseUrl) return ctx.databaseUrl;
  procs.database = await serveEmbeddedDatabase({ dir: ctx.pgliteDir, command: "geode demo" });
  return procs.database.url;
}

/** A NATS connection of the demo itself, for `use`. */
async function withNats<T>(ctx: DemoContext, natsUrl: string, use: (nc: NatsConnection) => Promise<T>) {
  const nc = await connect({ servers: natsUrl.split(",").map((u) => u.trim()), ...natsAuth(ctx.baseEnv) });
  try {
    return await use(nc);
  } finally {
    await nc.close();
  }
}

/**
 * The run's audit (DESIGN section 20): once the notary's checkpoints cover both logs, the services
 * stop (nothing more is appended) and the logs are verified as `geode audit verify --projection`
 * verifies them.
 */
async function auditRun(
  ctx: DemoContext,
  procs: DemoProcesses,
  natsUrl: string,
  projection: ProjectionDb,
): Promise<DemoAudit> {
  const plan = ctx.audit;
  if (!("keyFile" in plan)) {
    await stopProcesses(procs, false);
    return { status: "skipped", reason: plan.skipped };
  }
  const names = buildNames(ctx.ns);
  ctx.progress("waiting for the notary to sign a checkpoint of the run");
  const short = await withNats(ctx, natsUrl, (nc) =>
    awaitCheckpoints({ nc, names, projection, timeoutMs: CHECKPOINT_WAIT_MS }),
  );
  await stopProcesses(procs, false);
  if (short !== undefined) return { status: "failed", message: short };
  ctx.progress("verifying the run's audit logs (geode audit verify --projection)");
  return withNats(ctx, natsUrl, (nc) => verifyDemoAudit({ nc, names, projection, keyFile: plan.keyFile }));
}

/**
 * Runs the whole demo: the plane's services (all but the agent gateway) and the example handlers
 * as processes, the scripted session, the run's audit logs verified, then the audit read back
 * from the Postgres projection and the run's events.jsonl; at the end its namespace is removed
 * unless `keep`.
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const ctx = demoContext(options);
  const procs: DemoProcesses = { nats: undefined, database: undefined, services: [], examples: [] };
  try {
    const nats = await demoNats(ctx.natsSet, ctx.baseEnv, ctx.progress);
    procs.nats = nats.server;
    ctx.audit = demoAuditPlan(ctx);
    const databaseUrl = await demoDatabase(ctx, procs);
    const env = demoEnv(ctx, nats.url, databaseUrl);
    ctx.progress(`namespace ${ctx.ns}; starting the services`);
    startServices(procs, env, ctx);
    const session = await playSession(ctx, env, procs, nats.url);
    const projection = await openProjectionDb({ ns: ctx.ns, databaseUrl, command: "geode demo" });
    try {
      const audit = await auditRun(ctx, procs, nats.url, projection);
      return await readBack(ctx, nats.url, session, projection, audit);
    } finally {
      await projection.close();
    }
  } finally {
    await stopProcesses(procs, true);
  }
}

/** One row per hook and join point of the run, from `extension_invocations`. */
async function auditSurfaces(db: ProjectionDb["db"], runId: string): Promise<SurfaceRow[]> {
  const invocations = await db
    .selectFrom("extension_invocations")
    .select(["surface", "name", "extension", "status", "latency_ms"])
    .where("run_id", "=", runId)
    .execute();
  const groups = [
    ...HOOK_NAMES.map((h) => ({ surface: "hook", name: h })),
    ...JOIN_POINTS.map((j) => ({ surface: j, name: j })),
  ];
  return groups.map((g) => {
    const rows = invocations.filter(
      (r) => r.surface === g.surface && (g.surface !== "hook" || r.name === g.name),
    );
    const statuses: Record<string, number> = {};
    for (const r of rows) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    return {
      surface: g.surface,
      name: g.name,
      extensions: [...new Set(rows.map((r) => r.extension))].sort(),
      calls: rows.length,
      statuses,
      medianMs: median(rows.map((r) => Number(r.latency_ms))),
    };
  });
}

/** The run's activity rows, and how many of them started the mutation (`fs.write`). */
async function activityCounts(db: ProjectionDb["db"], runId: string) {
  const activity = await db
    .selectFrom("activity_events")
    .select((eb) => eb.fn.countAll<string | number>().as("n"))
    .where("run_id", "=", runId)
    .executeTakeFirstOrThrow();
  const started = await db
    .selectFrom("activity_events")
    .select(["payload"])
    .where("run_id", "=", runId)
    .where("event", "=", "tool_exec_started")
    .execute();
  const writeExecutions = started.filter(
    (r) => (r.payload as Record<string, unknown>)["tool_name"] === "fs.write",
  );
  return { postgresRows: Number(activity.n), writeExecutions: writeExecutions.length };
}

/** Rows of a run's events.jsonl (its truncation markers left out). */
function jsonlRowCount(file: string): number {
  if (!existsSync(file)) return 0;
  const lines = readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "");
  return lines.filter((l) => !l.includes('"projection.truncated"')).length;
}

/** Removes the demo's namespace (streams, buckets, schema, run files) through the open projection. */
async function removeDemoNamespace(ctx: DemoContext, natsUrl: string, projection: ProjectionDb) {
  return withNats(ctx, natsUrl, async (nc) => {
    const removal = await removeNamespace({ nc, ns: ctx.ns, db: projection, runsDir: ctx.runsDir });
    ctx.progress(`removed namespace ${ctx.ns} (geode demo --keep keeps it)`);
    return removal;
  });
}

/** The audit from the projection and the run's JSONL; then the namespace goes, unless kept. */
async function readBack(
  ctx: DemoContext,
  natsUrl: string,
  session: DemoSessionResult,
  projection: ProjectionDb,
  audit: DemoAudit,
): Promise<DemoResult> {
  const jsonlFile = path.join(ctx.runsDir, session.runId, "events.jsonl");
  const result: DemoResult = {
    namespace: ctx.ns,
    natsUrl,
    database: ctx.databaseUrl ? "postgres" : "pglite",
    session,
    surfaces: await auditSurfaces(projection.db, session.runId),
    ...(await activityCounts(projection.db, session.runId)),
    jsonlRows: jsonlRowCount(jsonlFile),
    jsonlFile,
    audit,
    removed: undefined,
    seconds: 0,
  };
  if (!ctx.keep) result.removed = await removeDemoNamespace(ctx, natsUrl, projection);
  result.seconds = (Date.now() - ctx.t0) / 1000;
  return result;
}

/**
 * Whether the demo showed what it promises: every hook and join point ran, Postgres and the JSONL
 * hold the same rows, the retried write ran once, and the audit did not fail to verify.
 */
export function demoPassed(r: DemoResult): boolean {
  const allRan = r.surfaces.every((s) => s.calls > 0);
  const recorded = r.postgresRows === r.jsonlRows && r.writeExecutions === 1;
  return allRan && recorded && r.audit.status !== "failed";
}

/** Removes what a kept demo left in NATS and on disk (tests that ran it with `keep`). */
export async function cleanupDemo(
  result: Pick<DemoResult, "namespace" | "natsUrl" | "jsonlFile">,
): Promise<void> {
  const nc = await connect({ servers: result.natsUrl });
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const found = (await natsNamespaces(nc)).get(result.namespace);
    for (const s of [...(found?.streams ?? []), ...(found?.buckets ?? [])])
      await jsm.streams.delete(s).catch(() => undefined);
  } finally {
    await nc.close();
  }
  rmSync(path.dirname(result.jsonlFile), { recursive: true, force: true });
}
