import path from "node:path";
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { registerCopyTarget } from "./copy-writer.js";
import { type ServedEmbeddedDatabase, useEmbeddedDatabase } from "./embedded-database.js";
import {
  databaseHint,
  describeDbError,
  isConnectionError,
  ProjectionUnavailableError,
  redactDatabaseUrl,
} from "./errors.js";
import { loadPglite } from "./load-pglite.js";
import { migrateProjection } from "./migrations.js";
import { type PgliteServer, servePglite } from "./pglite-server.js";
import type { ProjectionDatabase } from "./projection-schema.js";

/** Where the embedded database lives when `DATABASE_URL` is unset (docs/protocol.md#configuration). */
export const DEFAULT_PGLITE_DIR = ".geode/pgdata";

export interface ProjectionDbOptions {
  /** Namespace; its schema holds the tables. */
  ns: string;
  /** A PostgreSQL URL; unset means embedded PGlite under `pgliteDir`. */
  databaseUrl?: string | undefined;
  /** Data directory of the embedded database (default `.geode/pgdata`); `memory://` for none. */
  pgliteDir?: string;
  /** Pool size for PostgreSQL (default 4). */
  poolSize?: number;
  /** Run the migrations on open (default true). */
  migrate?: boolean;
  /**
   * What this process is (e.g. `geode replay`), named in the embedded database's owner file when
   * this process ends up serving it, and in the refusal other processes get.
   */
  command?: string;
}

/** See ProjectionDb.server. */
type DatabaseServer = "postgres" | "pglite";

/** An open projection: `db` is scoped to schema `{ns}`; `root` is unscoped (schema DDL). */
export interface ProjectionDb {
  readonly ns: string;
  readonly kind: "postgres" | "pglite";
  readonly db: Kysely<ProjectionDatabase>;
  // biome-ignore lint/suspicious/noExplicitAny: DDL across schemas is untyped.
  readonly root: Kysely<any>;
  /**
   * What answers at the other end, asked once it can be reached: PostgreSQL proper, or PGlite, in
   * this process or served on loopback by its owner (then reached through a URL like a
   * PostgreSQL, e.g. the `DATABASE_URL` that `geode up` gives its services). COPY and index DDL
   * around bulk loads are for PostgreSQL proper only.
   */
  server(): Promise<DatabaseServer>;
  /** Creates the schema and tables if absent. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens the projection database: PostgreSQL when a URL is given, otherwise the embedded PGlite in
 * `pgliteDir`. The embedded database has one owner process, which serves it over the PostgreSQL
 * wire protocol on loopback; this process becomes the owner when there is none, and otherwise
 * connects to the owner (or is refused with one line naming it). Either way the queries go
 * through pg (bigint columns come back as strings: readers normalize with `Number()`).
 */
export async function openProjectionDb(options: ProjectionDbOptions): Promise<ProjectionDb> {
  // biome-ignore lint/suspicious/noExplicitAny: see ProjectionDb.root.
  let root: Kysely<any>;
  let kind: ProjectionDb["kind"];
  let served: ServedEmbeddedDatabase | undefined;
  let where: string;
  let copyPool: pg.Pool | undefined;
  let memory: { url: string; close(): Promise<void> } | undefined;
  const dir = options.pgliteDir ?? DEFAULT_PGLITE_DIR;
  if (options.databaseUrl) {
    kind = "postgres";
    where = `PostgreSQL at ${redactDatabaseUrl(options.databaseUrl)}`;
    copyPool = resilientPool(options.databaseUrl, options.poolSize);
    root = new Kysely({ dialect: new PostgresDialect({ pool: copyPool }) });
  } else if (dir.startsWith("memory://")) {
    // In memory: nobody else can open it, so no owner; served on loopback to this process alone,
    // so its queries go through pg like every other kind's.
    kind = "pglite";
    where = "the in-memory database";
    memory = await serveInMemory();
    root = new Kysely({
      dialect: new PostgresDialect({ pool: resilientPool(memory.url, options.poolSize) }),
    });
  } else {
    kind = "pglite";
    where = `the embedded database ${dir}`;
    const embedded = await useEmbeddedDatabase({ dir, command: options.command ?? defaultCommand() });
    served = embedded.served;
    root = new Kysely({
      dialect: new PostgresDialect({ pool: resilientPool(embedded.url, options.poolSize) }),
    });
  }
  const close = async () => {
    try {
      await root.destroy();
    } finally {
      await served?.close();
      await memory?.close();
    }
  };
  let server: Promise<DatabaseServer> | undefined;
  const handle: ProjectionDb = {
    ns: options.ns,
    kind,
    db: root.withSchema(options.ns) as Kysely<ProjectionDatabase>,
    root,
    server() {
      if (kind === "pglite") return Promise.resolve("pglite");
      // Asked again after a failure (the database was down): the answer is only kept once known.
      server ??= askServer(root).catch((err: unknown) => {
        server = undefined;
        throw err;
      });
      return server;
    },
    migrate: () => migrateProjection(root, options.ns),
    close,
  };
  if (copyPool) registerCopyTarget(handle.db, { pool: copyPool, schema: options.ns, server: handle.server });
  if (options.migrate !== false) {
    try {
      await handle.migrate();
    } catch (err) {
      await close().catch(() => undefined);
      throw unavailable(err, where);
    }
  }
  return handle;
}

/** A PGlite in memory, served on loopback (closing it closes both). */
async function serveInMemory(): Promise<{ url: string; close(): Promise<void> }> {
  const lite = await (await loadPglite()).create();
  let server: PgliteServer;
  try {
    server = await servePglite(lite);
  } catch (err) {
    await lite.close();
    throw err;
  }
  return {
    url: server.url,
    async close() {
      try {
        await server.close();
      } finally {
        await lite.close();
      }
    },
  };
}

/** PGlite names itself in `version()`, also when served over the wire protocol. */
// biome-ignore lint/suspicious/noExplicitAny: see ProjectionDb.root.
async function askServer(root: Kysely<any>): Promise<DatabaseServer> {
  const r = await sql<{ version: string }>`select version() as version`.execute(root);
  return /\bPGlite\b/i.test(r.rows[0]?.version ?? "") ? "pglite" : "postgres";
}

/** This process, for an owner file: the script it runs (`main.ts` of a service, the CLI). */
function defaultCommand(): string {
  return path.basename(process.argv[1] ?? process.argv0);
}

/**
 * A pg pool whose connections may die at any time (Postgres stopped fast or immediate, a network
 * reset) without taking the process down: pg emits `error` on a client that loses its connection
 * while no query runs on it, and an `error` event without a listener throws. The pool already
 * listens on idle clients; a client that is checked out (between two statements of a transaction)
 * has no listener, so each one gets its own. The failing statement still reports the error, and
 * the pool drops the broken client.
 */
function resilientPool(connectionString: string, max = 4): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 10_000 });
  pool.on("error", () => undefined);
  pool.on("connect", (client) => {
    client.on("error", () => undefined);
  });
  return pool;
}

/** The one-line error of a projection that could not be opened. */
function unavailable(err: unknown, where: string): Error {
  if (err instanceof ProjectionUnavailableError) return err;
  const what = isConnectionError(err) ? "is not reachable" : "failed";
  const hint = databaseHint(err);
  return new ProjectionUnavailableError(`${where} ${what}: ${describeDbError(err)}`, {
    cause: err,
    ...(hint !== undefined ? { hint } : {}),
  });
}
