import { createHash, randomUUID } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { redactUrl } from "@geode/bus";
import { processAlive } from "@geode/projection";

/**
 * What a running `geode up` that serves the embedded PGlite says of itself, so that a CLI command
 * in any folder finds the plane's projection: one file per namespace and NATS, in the user's own
 * runtime folder (`$XDG_RUNTIME_DIR/geode/planes`, else `~/.geode/planes`).
 */
export interface PlaneRecord {
  pid: number;
  namespace: string;
  /** The plane's NATS, without credentials. */
  nats: string;
  /** Where the owner serves the embedded database (loopback, no password). */
  database_url: string;
  /** The folder `geode up` runs in (its `.geode/pgdata`). */
  folder: string;
  started_at: number;
  token: string;
}

/** The user's folder of plane records. */
function planeRecordsDir(env: Record<string, string | undefined>): string {
  const runtime = env["XDG_RUNTIME_DIR"];
  if (runtime) return path.join(runtime, "geode", "planes");
  return path.join(env["HOME"] || homedir(), ".geode", "planes");
}

/**
 * One NATS as a key: every server of the URL list, without credentials, `localhost` as
 * 127.0.0.1 and the default port made explicit, so the spellings of one address agree.
 */
function natsKey(natsUrl: string): string {
  const servers = natsUrl.split(",").map((s) => {
    try {
      const u = new URL(s.trim().includes("://") ? s.trim() : `nats://${s.trim()}`);
      const host = u.hostname === "localhost" ? "127.0.0.1" : u.hostname.toLowerCase();
      return `${host}:${u.port || "4222"}`;
    } catch {
      return s.trim();
    }
  });
  return servers.sort().join(",");
}

function recordFile(env: Record<string, string | undefined>, namespace: string, natsUrl: string): string {
  const key = createHash("sha256").update(natsKey(natsUrl)).digest("hex").slice(0, 16);
  return path.join(planeRecordsDir(env), `${namespace}-${key}.json`);
}

/**
 * Records this process as the plane of `namespace` on `natsUrl` (replacing a record of one that is
 * gone); `release` removes it, as does this process's exit.
 */
export function recordPlane(
  env: Record<string, string | undefined>,
  plane: { namespace: string; natsUrl: string; databaseUrl: string; folder: string },
): { release(): void } {
  const file = recordFile(env, plane.namespace, plane.natsUrl);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const record: PlaneRecord = {
    pid: process.pid,
    namespace: plane.namespace,
    nats: redactUrl(plane.natsUrl, { maskUser: true }),
    database_url: plane.databaseUrl,
    folder: plane.folder,
    started_at: Date.now(),
    token: randomUUID(),
  };
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(record), { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  const release = () => {
    process.off("exit", release);
    if (readRecord(file)?.token !== record.token) return;
    try {
      unlinkSync(file);
    } catch {
      // Gone already.
    }
  };
  process.on("exit", release);
  return { release };
}

function readRecord(file: string): PlaneRecord | undefined {
  try {
    const r = JSON.parse(readFileSync(file, "utf8")) as Partial<PlaneRecord>;
    if (
      typeof r.pid === "number" &&
      typeof r.database_url === "string" &&
      typeof r.folder === "string" &&
      typeof r.token === "string"
    )
      return r as PlaneRecord;
  } catch {
    // Missing, being replaced or damaged: no plane to reach through it.
  }
  return undefined;
}

/** The running plane of `namespace` on `natsUrl`, if its `geode up` is still alive. */
export function findPlane(
  env: Record<string, string | undefined>,
  namespace: string,
  natsUrl: string,
): PlaneRecord | undefined {
  const r = readRecord(recordFile(env, namespace, natsUrl));
  return r && r.database_url !== "" && processAlive(r.pid) ? r : undefined;
}
