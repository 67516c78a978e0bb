import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createHookClient, type HookClient, RuntimeEventBus } from "@geode/bus";
import { names as buildNames, GeodeError, HookName, type Names } from "@geode/contracts";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { createToolClient, type ToolClient } from "@geode/runtime";
import { type ServedHook, type ServedTool, serveHook, serveTool } from "@geode/sdk";
import {
  DEFAULT_DATABASE_URL,
  type SpawnedProcess,
  spawnService,
  uniqueNamespace,
  waitFor,
} from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import pg from "pg";
import { type NatsCluster, startCluster } from "../infra/cluster/cluster.js";

export const PLANE_SERVICES = [
  "hook-dispatcher",
  "tool-executor",
  "verifier",
  "activity-recorder",
  "agent-gateway",
] as const;
export type PlaneService = (typeof PLANE_SERVICES)[number];

/** One running replica of a service: its process, restartable under the same environment. */
interface Replica {
  readonly service: PlaneService;
  readonly index: number;
  proc: SpawnedProcess;
  /** What the earlier incarnations of this replica logged. */
  readonly earlier: string[];
}

/**
 * A three-node JetStream cluster (R3 everything), the plane's services as processes on it, and
 * this process's own connection to all nodes. Postgres is the local one, in the plane's schema.
 */
export interface ClusterPlane {
  cluster: NatsCluster;
  ns: string;
  names: Names;
  nc: NatsConnection;
  databaseUrl: string;
  replicas: Replica[];
  /** Starts a replica of `service` and waits until it answers health. */
  startReplica(service: PlaneService): Promise<Replica>;
  /** Restarts a stopped (or killed) replica in place. */
  restart(replica: Replica): Promise<void>;
  /** Stops every replica, the cluster, and drops the namespace's schema. */
  stop(): Promise<void>;
}

export async function startClusterPlane(
  counts: Partial<Record<PlaneService, number>>,
): Promise<ClusterPlane> {
  // Everything this process provisions (the handler registry, sessions, the test's own bus) is R3 too.
  process.env["GEODE_STREAM_REPLICAS"] = "3";
  const cluster = await startCluster();
  const ns = uniqueNamespace("c");
  const names = buildNames(ns);
  const databaseUrl = process.env["DATABASE_URL"] || DEFAULT_DATABASE_URL;
  const runsDir = mkdtempSync(path.join(tmpdir(), "geode-runs-"));
  const nc = await connect({
    servers: cluster.url.split(","),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  });
  const childEnv = {
    NATS_URL: cluster.url,
    GEODE_NAMESPACE: ns,
    DATABASE_URL: databaseUrl,
    GEODE_STREAM_REPLICAS: "3",
    GEODE_RUNS_DIR: runsDir,
    GEODE_GATEWAY_ADDR: "127.0.0.1:0",
    GEODE_RECEIPT_LEASE_MS: "3000",
    LOG_LEVEL: "info",
  };
  const replicas: Replica[] = [];
  // Like any supervisor (`geode up`, a container runtime), start a replica again when it exits
  // during start-up: right after the cluster forms, creating an R3 stream can time out once.
  const spawnReplica = async (service: PlaneService): Promise<SpawnedProcess> => {
    for (let attempt = 1; ; attempt++) {
      const proc = spawnService(`services/${service}/src/main.ts`, childEnv);
      try {
        await proc.waitForOutput(new RegExp(`${service} started`), 90_000);
        return proc;
      } catch (err) {
        await proc.stop("SIGKILL").catch(() => undefined);
        if (attempt >= 3) throw err;
      }
    }
  };
  const plane: ClusterPlane = {
    cluster,
    ns,
    names,
    nc,
    databaseUrl,
    replicas,
    async startReplica(service) {
      const r: Replica = {
        service,
        index: replicas.filter((x) => x.service === service).length,
        proc: await spawnReplica(service),
        earlier: [],
      };
      replicas.push(r);
      return r;
    },
    async restart(r) {
      r.earlier.push(r.proc.output());
      r.proc = await spawnReplica(r.service);
    },
    async stop() {
      await Promise.all(replicas.map((r) => r.proc.stop("SIGKILL")));
      await nc.close().catch(() => undefined);
      await cluster.stop();
      rmSync(runsDir, { recursive: true, force: true });
      const client = new pg.Client({ connectionString: databaseUrl });
      try {
        await client.connect();
        await client.query(`drop schema if exists "${ns}" cascade`);
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  };
  try {
    // Services one after another: tsx start-ups in parallel only compete for the two cores.
    for (const service of PLANE_SERVICES)
      for (let i = 0; i < (counts[service] ?? 0); i++) await plane.startReplica(service);
  } catch (err) {
    await plane.stop();
    throw err;
  }
  return plane;
}

/** The node (server_name) leading a stream, read with `$JS.API.STREAM.INFO`. */
export async function streamLeader(nc: NatsConnection, stream: string): Promise<string | undefined> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  return (await jsm.streams.info(stream)).cluster?.leader;
}

/** Waits until every replica of `stream` is current (caught up with its leader). */
export async function waitStreamCurrent(
  nc: NatsConnection,
  stream: string,
  timeoutMs = 60_000,
): Promise<void> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  await waitFor(
    async () => {
      try {
        const c = (await jsm.streams.info(stream)).cluster;
        return (
          c?.leader !== undefined &&
          (c.replicas ?? []).length === 2 &&
          (c.replicas ?? []).every((p) => p.current)
        );
      } catch {
        return false;
      }
    },
    timeoutMs,
    250,
  );
}

/** One call of the load: when it started and ended (ms since epoch), and how it ended. */
export interface Sample {
  kind: "hook" | "tool" | "event";
  start: number;
  end: number;
  /** `ok`, a tool reply's status other than completed, or the error's code (`unavailable`, `timeout`, …). */
  outcome: string;
  /** The error message of a failure (first line). */
  message?: string;
}

export interface PlaneLoad {
  samples: Sample[];
  /** Ids of the events the stream acknowledged. */
  ackedEvents: string[];
  /** Terminal calls of the mutation tool per operation key. */
  executions: Map<string, number>;
  /** Operation keys the load called. */
  operations: string[];
  stop(): Promise<void>;
}

/**
 * A steady, modest load on the plane from this process: `hookCallers` loops invoking
 * UserPromptSubmit (one handler answers it), `toolCallers` loops calling a mutation tool (served
 * here, counting its executions per operation key) with a fresh operation key each, and
 * `eventsPerSecond` events published by this process's own bus.
 */
export async function startPlaneLoad(
  plane: ClusterPlane,
  options: { hookCallers: number; toolCallers: number; eventsPerSecond: number; pauseMs?: number },
): Promise<PlaneLoad> {
  const { nc, names } = plane;
  const conn = { nc, names };
  const executions = new Map<string, number>();
  const handler: ServedHook = await serveHook(
    conn,
    HookName.UserPromptSubmit,
    { name: "chaos-observer" },
    () => null,
  );
  const tool: ServedTool = await serveTool(
    conn,
    {
      name: "ledger.append",
      description: "appends one line to a ledger",
      input_schema: { type: "object" },
      effect: "mutation",
      requires_approval: false,
    },
    async (args) => {
      const op = String(args["op"]);
      executions.set(op, (executions.get(op) ?? 0) + 1);
      return { result: { appended: op } };
    },
  );
  const hooks: HookClient = createHookClient(nc, names);
  const tools: ToolClient = createToolClient(conn);
  const bus = await RuntimeEventBus.create({ nc, names, source: "chaos-load" });
  const samples: Sample[] = [];
  const ackedEvents: string[] = [];
  const operations: string[] = [];
  let running = true;
  const pause = options.pauseMs ?? 20;
  const record = (kind: Sample["kind"], start: number, outcome: string, message?: string) =>
    samples.push({ kind, start, end: Date.now(), outcome, ...(message ? { message } : {}) });
  const failure = (err: unknown) =>
    err instanceof GeodeError
      ? { code: err.code as string, message: err.message.split("\n")[0] }
      : { code: "thrown", message: String(err).split("\n")[0] };

  const hookLoop = async (i: number) => {
    for (let k = 0; running; k++) {
      const start = Date.now();
      try {
        await hooks.invoke(
          HookName.UserPromptSubmit,
          { user_input: `prompt ${i}.${k}` },
          { session_id: `s-hook-${i}` },
          { timeoutMs: 3_000 },
        );
        record("hook", start, "ok");
      } catch (err) {
        const f = failure(err);
        record("hook", start, f.code, f.message);
      }
      await new Promise((r) => setTimeout(r, pause));
    }
  };
  const toolLoop = async (i: number) => {
    for (let k = 0; running; k++) {
      const op = `op-${i}-${k}-${randomUUID().slice(0, 8)}`;
      operations.push(op);
      const start = Date.now();
      try {
        const reply = await tools.execute(
          {
            tool_name: "ledger.append",
            arguments: { op },
            operation_key: op,
            correlation: { session_id: `s-tool-${i}`, tool_call_id: `c-${k}` },
            timeout_ms: 3_000,
          },
          { timeoutMs: 6_000 },
        );
        // `replayed`: the reply was lost (its executor or its node died after the call), the client
        // read the completed receipt instead: the result arrived, executed once.
        record(
          "tool",
          start,
          reply.status === "completed" || reply.status === "replayed" ? "ok" : reply.status,
        );
      } catch (err) {
        const f = failure(err);
        record("tool", start, f.code, f.message);
      }
      await new Promise((r) => setTimeout(r, pause));
    }
  };
  const loops = [
    ...Array.from({ length: options.hookCallers }, (_, i) => hookLoop(i)),
    ...Array.from({ length: options.toolCallers }, (_, i) => toolLoop(i)),
  ];
  const perTick = options.eventsPerSecond / 10;
  const pendingEvents = new Set<Promise<unknown>>();
  const eventTimer = setInterval(() => {
    for (let k = 0; k < perTick; k++) {
      const id = randomUUID();
      const start = Date.now();
      const p = bus.emit("turn_completed", { k }, { session_id: "s-events" }, { id }).then((env) => {
        if (env) ackedEvents.push(id);
        record("event", start, env ? "ok" : "not_acked");
      });
      pendingEvents.add(p);
      void p.finally(() => pendingEvents.delete(p));
    }
  }, 100);
  return {
    samples,
    ackedEvents,
    executions,
    operations,
    async stop() {
      running = false;
      clearInterval(eventTimer);
      await Promise.all(loops);
      await Promise.all(pendingEvents);
      await bus.flush();
      await handler.close().catch(() => undefined);
      await tool.close().catch(() => undefined);
    },
  };
}

/** The projection of the plane's namespace (call `close()`). */
export function openPlaneProjection(plane: ClusterPlane): Promise<ProjectionDb> {
  return openProjectionDb({ ns: plane.ns, databaseUrl: plane.databaseUrl });
}

/** p-th percentile (0–100) of `values`, nearest rank; NaN when empty. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}
