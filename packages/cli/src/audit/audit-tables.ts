import { type Kysely, sql } from "kysely";
import type { LogName } from "./audit-options.js";

// biome-ignore lint/suspicious/noExplicitAny: the audit tables are read through raw SQL.
type Db = Kysely<any>;

/** A log as the notary stored it in `{ns}.audit_logs`. */
export interface StoredLog {
  /** The stream sequence of leaf 0. */
  readonly firstSeq: number;
  readonly size: number;
  readonly lastSeq: number;
  readonly gaps: number;
}

/** A checkpoint as the notary stored it in `{ns}.audit_checkpoints`: the note exactly as signed. */
export interface StoredCheckpoint {
  readonly size: number;
  readonly note: string;
  readonly signedAt: number;
}

const table = (ns: string, name: string) => sql.id(ns, name);

function isMissingTable(err: unknown): boolean {
  return (err as { code?: string } | undefined)?.code === "42P01";
}

/** The stored log, or undefined when the notary never kept it (no audit tables, or no row). */
export async function readStoredLog(db: Db, ns: string, log: LogName): Promise<StoredLog | undefined> {
  try {
    const r = await sql<{ first_seq: string; size: string; last_seq: string; gaps: string }>`
      select first_seq, size, last_seq, gaps from ${table(ns, "audit_logs")} where log = ${log}`.execute(db);
    const row = r.rows[0];
    if (!row) return undefined;
    return {
      firstSeq: Number(row.first_seq),
      size: Number(row.size),
      lastSeq: Number(row.last_seq),
      gaps: Number(row.gaps),
    };
  } catch (err) {
    if (isMissingTable(err)) return undefined;
    throw err;
  }
}

/** Every stored checkpoint of a log, by size. */
export async function readCheckpoints(db: Db, ns: string, log: LogName): Promise<StoredCheckpoint[]> {
  try {
    const r = await sql<{ size: string; note: string; signed_at: string }>`
      select size, note, signed_at from ${table(ns, "audit_checkpoints")} where log = ${log}
      order by size asc`.execute(db);
    return r.rows.map((row) => ({ size: Number(row.size), note: row.note, signedAt: Number(row.signed_at) }));
  } catch (err) {
    if (isMissingTable(err)) return [];
    throw err;
  }
}

/** The stored leaf hashes of leaves `[from, to)` (level 0 of `{ns}.audit_tree`), by index. */
export async function readLeafHashes(
  db: Db,
  ns: string,
  log: LogName,
  from: number,
  to: number,
): Promise<Map<number, Uint8Array>> {
  const out = new Map<number, Uint8Array>();
  if (to <= from) return out;
  const r = await sql<{ idx: string; hash: Buffer }>`
    select idx, hash from ${table(ns, "audit_tree")}
    where log = ${log} and level = 0 and idx >= ${from} and idx < ${to}`.execute(db);
  for (const row of r.rows) out.set(Number(row.idx), new Uint8Array(row.hash));
  return out;
}
