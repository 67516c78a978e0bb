import { mkdirSync } from "node:fs";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PGliteDialect, PostgresDialect } from "kysely";
import pg from "pg";
import {
  describeDbError,
  isConnectionError,
  ProjectionUnavailableError,
  redactDatabaseUrl,
} from "./errors.js";
import { migrateProjection } from "./migrations.js";
import type { ProjectionDatabase } from "./projection-schema.js";

/** Where the embedded database lives when `DATABASE_URL` is unset (DESIGN §10). */
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
}

/** An open projection: `db` is scoped to schema `{ns}`; `root` is unscoped (schema DDL). */
export interface ProjectionDb {
  readonly ns: string;
  readonly kind: "postgres" | "pglite";
  readonly db: Kysely<ProjectionDatabase>;
  // biome-ignore lint/suspicious/noExplicitAny: DDL across schemas is untyped.
  readonly root: Kysely<any>;
  /** Creates the schema and tables if absent. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens the projection database: PostgreSQL when a URL is given, otherwise embedded PGlite (same
 * migrations and queries; bigint columns come back as strings from pg and numbers from PGlite,
 * so every reader here normalizes with `Number()`).
 */
export async function openProjectionDb(options: ProjectionDbOptions): Promise<ProjectionDb> {
  // biome-ignore lint/suspicious/noExplicitAny: see ProjectionDb.root.
  let root: Kysely<any>;
  let kind: ProjectionDb["kind"];
  if (options.databaseUrl) {
    kind = "postgres";
    root = new Kysely({
      dialect: new PostgresDialect({ pool: resilientPool(options.databaseUrl, options.poolSize) }),
    });
  } else {
    kind = "pglite";
    const dir = options.pgliteDir ?? DEFAULT_PGLITE_DIR;
    if (!dir.startsWith("memory://")) mkdirSync(path.resolve(dir), { recursive: true });
    const lite = await PGlite.create(dir.startsWith("memory://") ? undefined : path.resolve(dir));
    root = new Kysely({ dialect: new PGliteDialect({ pglite: lite }) });
  }
  const handle: ProjectionDb = {
    ns: options.ns,
    kind,
    db: root.withSchema(options.ns) as Kysely<ProjectionDatabase>,
    root,
    migrate: () => migrateProjection(root, options.ns),
    close: () => root.destroy(),
  };
  if (options.migrate !== false) {
    try {
      await handle.migrate();
    } catch (err) {
      await root.destroy().catch(() => undefined);
      throw unavailable(err, options.databaseUrl);
    }
  }
  return handle;
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
function unavailable(err: unknown, databaseUrl: string | undefined): Error {
  if (err instanceof ProjectionUnavailableError || !databaseUrl) return err as Error;
  const what = isConnectionError(err) ? "is not reachable" : "failed";
  return new ProjectionUnavailableError(
    `PostgreSQL at ${redactDatabaseUrl(databaseUrl)} ${what}: ${describeDbError(err)}`,
    { cause: err },
  );
}
