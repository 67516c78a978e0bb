import path from "node:path";
import { DEFAULT_PGLITE_DIR, redactDatabaseUrl, serveEmbeddedDatabase } from "@geode/projection";
import type { GeodeConfig } from "@geode/service";
import { recordPlane } from "../plane-record.js";

/** The services that read or write the projection database. */
const PROJECTION_SERVICES = new Set(["activity-recorder"]);

/** The projection database `geode up` gives its services. */
export interface UpDatabase {
  /** `DATABASE_URL` for the services (the embedded database's loopback address when served here). */
  readonly url: string | undefined;
  /** For the summary line, without a password. */
  readonly label: string;
  /** Stops serving the embedded database (after the services have stopped). */
  close(): Promise<void>;
}

/**
 * With `DATABASE_URL` set, the services use it. Unset, `geode up` owns the embedded PGlite in
 * `.geode/pgdata`: it opens it once, serves it on loopback and passes that URL to every service,
 * so no second process ever opens the folder. It records itself per namespace and NATS in the
 * user's runtime folder (`plane-record.ts`), so CLI commands in any folder find that URL. Refused
 * with one line naming the owner when another process already has the folder. Started only when a
 * service that uses the projection runs.
 */
export async function provideDatabase(
  config: GeodeConfig,
  services: ReadonlyArray<{ name: string }>,
  env: Record<string, string | undefined>,
): Promise<UpDatabase> {
  if (config.databaseUrl)
    return { url: config.databaseUrl, label: redactDatabaseUrl(config.databaseUrl), close: async () => {} };
  if (!services.some((s) => PROJECTION_SERVICES.has(s.name)))
    return { url: undefined, label: "none (no service here uses it)", close: async () => {} };
  const served = await serveEmbeddedDatabase({ dir: DEFAULT_PGLITE_DIR, command: "geode up" });
  let record: { release(): void };
  try {
    record = recordPlane(env, {
      namespace: config.namespace,
      natsUrl: config.natsUrl,
      databaseUrl: served.url,
      folder: process.cwd(),
    });
  } catch (err) {
    await served.close();
    throw err;
  }
  return {
    url: served.url,
    label: `embedded PGlite (${path.relative(process.cwd(), served.dir) || "."}) served at ${served.url}`,
    async close() {
      record.release();
      await served.close();
    },
  };
}
