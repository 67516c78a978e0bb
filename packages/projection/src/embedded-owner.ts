import { randomUUID } from "node:crypto";
import {
  closeSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import path from "node:path";

/** The owner file in an embedded database's data folder: who serves it, and where. */
export const OWNER_FILE = "geode-owner.json";

/** What the owner file says. */
export interface EmbeddedOwner {
  pid: number;
  /** What the owner is, for people: `geode up`, `activity-recorder`, `geode replay`. */
  command: string;
  /** Where it serves the database (empty while it is still opening it). */
  url: string;
  started_at: number;
  /** Tells this owner's file from a later one. */
  token: string;
}

/** The data folder, taken: advertise where it is served, release it when done. */
interface OwnerClaim {
  readonly file: string;
  readonly record: EmbeddedOwner;
  advertise(url: string): void;
  /** Removes the owner file, if it is still this claim's. */
  release(): void;
}

/** The folder is owned by a live process, or `claim` now owns it. */
export type ClaimResult = { claim: OwnerClaim } | { owner: EmbeddedOwner };

type Read = { state: "ok"; record: EmbeddedOwner } | { state: "missing" } | { state: "unreadable" };

function readOwner(file: string): Read {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { state: "missing" };
    throw err;
  }
  try {
    const r = JSON.parse(text) as Partial<EmbeddedOwner>;
    if (typeof r.pid === "number" && typeof r.token === "string" && typeof r.url === "string")
      return { state: "ok", record: r as EmbeddedOwner };
  } catch {
    // Being written right now, or damaged: the caller waits, then treats an old one as stale.
  }
  return { state: "unreadable" };
}

/** True while a process with this pid exists (EPERM: it exists, as another user). */
/** Whether process `pid` is alive (signal 0; EPERM means it is, owned by someone else). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Creates the owner file only if there is none (O_EXCL): exactly one process can succeed. */
function create(file: string, record: EmbeddedOwner): boolean {
  let fd: number;
  try {
    fd = openSync(file, "wx", 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
  try {
    writeSync(fd, JSON.stringify(record));
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Moves a stale owner file aside and deletes it. The rename is atomic, so of several processes
 * that found the same stale file one moves it; one that moved a newer owner's file instead puts it
 * back (link fails if yet another owner exists, which then stands).
 */
function removeStale(file: string, staleToken: string | undefined): void {
  const aside = `${file}.stale-${process.pid}-${randomUUID().slice(0, 8)}`;
  try {
    renameSync(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  const moved = readOwner(aside);
  const wasStale = moved.state !== "ok" || moved.record.token === staleToken;
  if (!wasStale) {
    try {
      linkSync(aside, file);
    } catch {
      // Someone else owns it by now.
    }
  }
  unlinkSync(aside);
}

/**
 * Takes the data folder `dir` for this process, or says which live process has it. An owner file
 * of a process that no longer exists (killed, crashed) is stale and taken over.
 */
export async function claimDataFolder(dir: string, command: string): Promise<ClaimResult> {
  const file = path.join(dir, OWNER_FILE);
  const record: EmbeddedOwner = {
    pid: process.pid,
    command,
    url: "",
    started_at: Date.now(),
    token: randomUUID(),
  };
  for (let attempt = 0; attempt < 200; attempt++) {
    if (create(file, record)) return { claim: ownerClaim(file, record) };
    const found = readOwner(file);
    if (found.state === "missing") continue;
    if (found.state === "ok") {
      if (processAlive(found.record.pid)) return { owner: found.record };
      removeStale(file, found.record.token);
      continue;
    }
    // Unreadable: an owner writing it this instant, or a file that a crash left half written.
    const age = (() => {
      try {
        return Date.now() - statSync(file).mtimeMs;
      } catch {
        return 0;
      }
    })();
    if (age > 2_000) removeStale(file, undefined);
    else await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`could not take or read ${file}`);
}

function ownerClaim(file: string, record: EmbeddedOwner): OwnerClaim {
  let current = record;
  const onExit = () => claim.release();
  const claim: OwnerClaim = {
    file,
    get record() {
      return current;
    },
    advertise(url) {
      current = { ...current, url };
      // Replaced whole (rename), so a reader never sees half of it.
      const tmp = `${file}.tmp-${process.pid}`;
      writeFileSync(tmp, JSON.stringify(current));
      renameSync(tmp, file);
    },
    release() {
      process.off("exit", onExit);
      const found = readOwner(file);
      if (found.state === "ok" && found.record.token === current.token) unlinkSync(file);
    },
  };
  // A process that exits without closing still frees the folder (a crash leaves a stale file).
  process.on("exit", onExit);
  return claim;
}

/** Reads the owner file of `dir` (undefined when nobody owns it or its owner is gone). */
export function readLiveOwner(dir: string): EmbeddedOwner | undefined {
  const found = readOwner(path.join(dir, OWNER_FILE));
  return found.state === "ok" && processAlive(found.record.pid) ? found.record : undefined;
}
