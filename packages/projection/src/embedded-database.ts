import { mkdirSync } from "node:fs";
import path from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { claimDataFolder, type EmbeddedOwner, OWNER_FILE, readLiveOwner } from "./embedded-owner.js";
import { describeDbError, ProjectionUnavailableError } from "./errors.js";
import { loadPglite } from "./load-pglite.js";
import { type PgliteServer, servePglite } from "./pglite-server.js";

/** An embedded database this process owns, served on loopback to every other process. */
export interface ServedEmbeddedDatabase {
  /** The connection string the other processes use. */
  readonly url: string;
  readonly dir: string;
  /** Stops serving, closes the database, frees the data folder. */
  close(): Promise<void>;
}

const who = (o: EmbeddedOwner) => `pid ${o.pid} (${o.command})`;

/**
 * Opens the embedded database in `dir` as its one owner and serves it over the PostgreSQL wire
 * protocol on loopback, advertising the URL in the folder's owner file. Refused, with one line
 * naming the owner, when another live process owns the folder: two processes never open one data
 * folder.
 */
export async function serveEmbeddedDatabase(options: {
  dir: string;
  /** What this process is, written into the owner file (e.g. `geode up`). */
  command: string;
}): Promise<ServedEmbeddedDatabase> {
  const dir = path.resolve(options.dir);
  mkdirSync(dir, { recursive: true });
  const claimed = await claimDataFolder(dir, options.command);
  if ("owner" in claimed)
    throw new ProjectionUnavailableError(
      `the embedded database ${options.dir} is already open in ${who(claimed.owner)}${claimed.owner.url ? ` at ${claimed.owner.url}` : ""}; ` +
        "stop that process first, or set DATABASE_URL",
      { details: { owner: claimed.owner } },
    );
  const { claim } = claimed;
  let lite: PGlite | undefined;
  let server: PgliteServer | undefined;
  try {
    lite = await (await loadPglite()).create(dir);
    server = await servePglite(lite);
    claim.advertise(server.url);
  } catch (err) {
    await server?.close().catch(() => undefined);
    await lite?.close().catch(() => undefined);
    claim.release();
    throw err;
  }
  const [db, srv] = [lite, server];
  return {
    url: srv.url,
    dir,
    async close() {
      try {
        await srv.close();
        await db.close();
      } finally {
        claim.release();
      }
    },
  };
}

/**
 * The embedded database in `dir` for a process that uses it: served by this process when nobody
 * owns the folder (`served` is then set), otherwise reached through its live owner. A process
 * that cannot reach the owner is refused with one line naming it.
 */
export async function useEmbeddedDatabase(options: {
  dir: string;
  command: string;
}): Promise<{ url: string; served?: ServedEmbeddedDatabase }> {
  for (let attempt = 0; ; attempt++) {
    try {
      const served = await serveEmbeddedDatabase(options);
      return { url: served.url, served };
    } catch (err) {
      const owner =
        err instanceof ProjectionUnavailableError ? (err.details["owner"] as EmbeddedOwner) : undefined;
      if (!owner) throw err;
      const url = owner.url || (await advertisedUrl(path.resolve(options.dir), owner));
      const problem = await probe(url);
      if (problem === undefined) return { url };
      // The owner may have just gone (its file is then stale): try once more to take the folder.
      if (attempt > 0)
        throw new ProjectionUnavailableError(
          `the embedded database ${options.dir} is owned by ${who(owner)}, which does not answer at ${url || "(no address yet)"}: ${problem}; ` +
            `stop that process, or remove ${path.join(options.dir, OWNER_FILE)} if it is not a GEODE process`,
        );
    }
  }
}

/** Waits a little for an owner that is still opening the database to say where it serves it. */
async function advertisedUrl(dir: string, owner: EmbeddedOwner): Promise<string> {
  for (let i = 0; i < 150; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const now = readLiveOwner(dir);
    if (!now || now.token !== owner.token) return "";
    if (now.url) return now.url;
  }
  return "";
}

/** Undefined when a connection to `url` works, else why not. */
async function probe(url: string): Promise<string | undefined> {
  if (!url) return "it has not started serving";
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("select 1");
    return undefined;
  } catch (err) {
    return describeDbError(err);
  } finally {
    await client.end().catch(() => undefined);
  }
}
