import type { GeodeConfig } from "@geode/bus";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";

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
