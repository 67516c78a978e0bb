import { existsSync } from "node:fs";
import path from "node:path";
import { redactUrl } from "@geode/bus";
import {
  DEFAULT_PGLITE_DIR,
  openProjectionDb,
  type ProjectionDb,
  ProjectionUnavailableError,
  readLiveOwner,
} from "@geode/projection";
import type { GeodeConfig } from "@geode/service";
import { findPlane } from "./plane-record.js";

type Env = Record<string, string | undefined>;

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

/**
 * Where the projection is: DATABASE_URL; else the embedded database of this folder while its
 * owner runs; else the one a running `geode up` of this namespace and NATS serves from whatever
 * folder it runs in (its plane record); else this folder's embedded database, when there is one
 * (nobody serves it: this process will). Undefined when there is none of these.
 */
function locateProjection(
  config: GeodeConfig,
  env: Env,
): { databaseUrl: string | undefined; via?: string } | undefined {
  if (config.databaseUrl) return { databaseUrl: config.databaseUrl };
  const here = path.resolve(DEFAULT_PGLITE_DIR);
  if (existsSync(here) && readLiveOwner(here)) return { databaseUrl: undefined };
  const plane = findPlane(env, config.namespace, config.natsUrl);
  if (plane)
    return {
      databaseUrl: plane.database_url,
      via: `the embedded database of geode up (pid ${plane.pid}, in ${plane.folder})`,
    };
  return existsSync(here) ? { databaseUrl: undefined } : undefined;
}

/**
 * The one line a command that reads the projection says when there is none (it never creates an
 * empty one in a folder the plane does not run in, say a handler's).
 */
export function noPlaneFound(config: GeodeConfig): string {
  return (
    `no running plane for namespace ${config.namespace} on NATS ${redactUrl(config.natsUrl, { maskUser: true })}: ` +
    "start it with `geode up` (in any folder), or set DATABASE_URL to the plane's database"
  );
}

/**
 * The projection wherever the plane keeps it (locateProjection), opened as `command`; else says
 * `noPlaneFound` on `err` and gives undefined.
 */
export async function openExistingProjection(
  config: GeodeConfig,
  command: string,
  io: { env: Env; err: (text: string) => void },
  migrate = true,
): Promise<ProjectionDb | undefined> {
  const found = locateProjection(config, io.env);
  if (!found) {
    io.err(`${command}: ${noPlaneFound(config)}\n`);
    return undefined;
  }
  try {
    return await openProjectionDb({
      ns: config.namespace,
      databaseUrl: found.databaseUrl,
      migrate,
      command,
    });
  } catch (err) {
    if (found.via && err instanceof ProjectionUnavailableError)
      throw new ProjectionUnavailableError(`${found.via}: ${err.message}`, { cause: err });
    throw err;
  }
}
