import { randomBytes } from "node:crypto";
import { names as buildNames, type Names } from "@geode/contracts";
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { DEFAULT_DATABASE_URL, DEFAULT_NATS_URL } from "./reachability.js";

/** What a test gets: live handles on real NATS and PostgreSQL, scoped to its own namespace. */
export interface TestEnv {
  /** Unique namespace of this test file; every stream, bucket and schema lives under it. */
  ns: string;
  names: Names;
  natsUrl: string;
  databaseUrl: string;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** Env vars a service process needs to join this namespace. */
  env: Record<string, string>;
  /** Opens an extra NATS connection (closed on cleanup). */
  connect(name?: string): Promise<NatsConnection>;
  /** Deletes the namespace's streams, buckets and Postgres schema and closes connections. */
  cleanup(): Promise<void>;
}

export function uniqueNamespace(prefix = "t"): string {
  return `${prefix}_${process.pid.toString(36)}_${randomBytes(4).toString("hex")}`.slice(0, 32);
}

function providedOr(key: "natsUrl" | "databaseUrl", fallback: string): string {
  try {
    return (inject(key) as string | undefined) ?? fallback;
  } catch {
    return fallback;
  }
}

/** Creates a test environment (use in `beforeAll`; call `cleanup()` in `afterAll`). */
export async function createTestEnv(options: { ns?: string } = {}): Promise<TestEnv> {
  const natsUrl = providedOr("natsUrl", process.env["NATS_URL"] || DEFAULT_NATS_URL);
  const databaseUrl = providedOr("databaseUrl", process.env["DATABASE_URL"] || DEFAULT_DATABASE_URL);
  const ns = options.ns ?? uniqueNamespace();
  const n = buildNames(ns);
  const connections: NatsConnection[] = [];
  const open = async (name = `test-${ns}`) => {
    const c = await connect({ servers: natsUrl, name });
    connections.push(c);
    return c;
  };
  const nc = await open();
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  return {
    ns,
    names: n,
    natsUrl,
    databaseUrl,
    nc,
    js: jetstream(nc),
    jsm,
    // Metrics off: test processes must not compete for the default port; a test that scrapes
    // gives its own free ports.
    env: {
      NATS_URL: natsUrl,
      DATABASE_URL: databaseUrl,
      GEODE_NAMESPACE: ns,
      LOG_LEVEL: "warn",
      GEODE_METRICS_PORT: "0",
    },
    connect: open,
    async cleanup() {
      await cleanupNamespace(jsm, ns, databaseUrl).catch(() => undefined);
      for (const c of connections) if (!c.isClosed()) await c.close().catch(() => undefined);
    },
  };
}

/** Deletes every stream, KV bucket and Object Store of `ns` and drops its Postgres schema. */
export async function cleanupNamespace(
  jsm: JetStreamManager,
  ns: string,
  databaseUrl?: string,
): Promise<void> {
  const NS = ns.toUpperCase();
  const doomed: string[] = [];
  for await (const si of jsm.streams.list()) {
    const name = si.config.name;
    if (name.startsWith(`${NS}_`) || name.startsWith(`KV_${ns}_`) || name.startsWith(`OBJ_${ns}_`))
      doomed.push(name);
  }
  for (const name of doomed) await jsm.streams.delete(name).catch(() => undefined);
  if (databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl });
    try {
      await client.connect();
      await client.query(`drop schema if exists "${ns}" cascade`);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/**
 * Registers `beforeAll`/`afterAll` for a test file and returns the environment getter.
 * `const env = useTestEnv(); it("…", () => env().nc …)`.
 */
export function useTestEnv(): () => TestEnv {
  let current: TestEnv | undefined;
  beforeAll(async () => {
    current = await createTestEnv();
  });
  afterAll(async () => {
    await current?.cleanup();
  });
  return () => {
    if (!current) throw new Error("test env is not ready: call env() inside a test or hook");
    return current;
  };
}

/**
 * A test file's fixture built once on its own namespace (`beforeAll`) and stopped at the end; use
 * the getter inside tests.
 */
export function useFixture<T>(
  create: (env: TestEnv) => Promise<T>,
  stop: (fixture: T) => Promise<void>,
): { fixture: () => T; env: () => TestEnv } {
  const env = useTestEnv();
  let current: T | undefined;
  beforeAll(async () => {
    current = await create(env());
  });
  afterAll(async () => {
    if (current !== undefined) await stop(current);
  });
  return {
    env,
    fixture: () => {
      if (current === undefined) throw new Error("fixture is not ready: use it inside a test or hook");
      return current;
    },
  };
}
