import { existsSync } from "node:fs";
import path from "node:path";
import type { GeodeConfig } from "@geode/bus";
import { DEFAULT_PGLITE_DIR, openProjectionDb, type ProjectionDb } from "@geode/projection";

/**
 * The projection of the configured namespace: PostgreSQL, or with DATABASE_URL unset the embedded
 * PGlite, reached through the process that owns it (or served by this one when nobody does).
 */
export function openProjectionFromEnv(
  config: GeodeConfig,
  command: string,
  migrate = true,
): Promise<ProjectionDb> {
  return openProjectionDb({ ns: config.namespace, databaseUrl: config.databaseUrl, migrate, command });
}

/** True when there is a projection to read: DATABASE_URL, or an embedded database in this folder. */
export function projectionHere(config: GeodeConfig): boolean {
  return Boolean(config.databaseUrl) || existsSync(path.resolve(DEFAULT_PGLITE_DIR));
}

/**
 * The one line a command that reads the projection says when there is none here (it never creates
 * an empty one in a folder the plane does not run in, say a handler's).
 */
function noProjectionHere(command: string): string {
  return (
    `${command}: no projection here: DATABASE_URL is unset and there is no ${DEFAULT_PGLITE_DIR} in this folder; ` +
    `set DATABASE_URL to the plane's database (geode up prints the embedded one's as "served at postgres://…"), or run it where geode up runs\n`
  );
}

/** The projection, when there is one here; else says so (`noProjectionHere`) and gives undefined. */
export async function openExistingProjection(
  config: GeodeConfig,
  command: string,
  err: (text: string) => void,
): Promise<ProjectionDb | undefined> {
  if (projectionHere(config)) return openProjectionFromEnv(config, command);
  err(noProjectionHere(command));
  return undefined;
}
