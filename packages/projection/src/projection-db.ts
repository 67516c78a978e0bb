import { mkdirSync } from "node:fs";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PGliteDialect, PostgresDialect } from "kysely";
import pg from "pg";
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
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolSize ?? 4 });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    pool.on("error", () => undefined);
    root = new Kysely({ dialect: new PostgresDialect({ pool }) });
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
      throw err;
    }
  }
  return handle;
}
