import type { Kysely } from "kysely";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import type { BatchResult, ProjectionBatch } from "./projection-rows.js";
import { storedPayloadJson } from "./projection-rows.js";
import type { ProjectionDatabase } from "./projection-schema.js";
import { insertQuarantinedPg } from "./quarantined-messages.js";

/** A table's columns and their Postgres types, in COPY order. */
export type ColumnList = ReadonlyArray<readonly [string, string]>;

/** Where a projection reached by URL may write by COPY: its pool, schema and server. */
interface CopyTarget {
  pool: pg.Pool;
  schema: string;
  /** PostgreSQL proper takes COPY; PGlite served over the wire protocol does not (it stalls). */
  server: () => Promise<"postgres" | "pglite">;
}

const targets = new WeakMap<object, CopyTarget>();

/**
 * Marks a projection handle reached by URL: once its server turns out to be PostgreSQL proper,
 * its batches are written with COPY through `pool`. PGlite (in process, or served by its owner on
 * loopback and reached by URL) keeps the single-statement json_to_recordset path.
 */
export function registerCopyTarget(db: Kysely<ProjectionDatabase>, target: CopyTarget): void {
  targets.set(db, target);
}

/** The COPY target of a handle whose server is PostgreSQL proper; undefined otherwise. */
export async function copyTargetOf(db: Kysely<ProjectionDatabase>): Promise<CopyTarget | undefined> {
  const target = targets.get(db);
  if (!target) return undefined;
  return (await target.server()) === "postgres" ? target : undefined;
}

/** Connections whose staging tables exist (temp tables live as long as their connection). */
const staged = new WeakMap<pg.ClientBase, Set<string>>();

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

const SPECIAL = /[\\\t\n\r]/;
const SPECIALS = /[\\\t\n\r]/g;
const escaped = (ch: string) => (ch === "\\" ? "\\\\" : ch === "\t" ? "\\t" : ch === "\n" ? "\\n" : "\\r");

/** COPY text format: backslash, tab, newline and carriage return are escaped; null is `\N`. */
function copyText(s: string): string {
  // Most ids, names and payloads hold none of the four (JSON text has no raw tab or newline).
  return SPECIAL.test(s) ? s.replace(SPECIALS, escaped) : s;
}

type Encoder = (v: unknown) => string;
const NULL = "\\N";
const asText: Encoder = (v) => (typeof v === "string" ? copyText(v) : v == null ? NULL : copyText(String(v)));
const asNumber: Encoder = (v) =>
  typeof v === "number" ? (Number.isFinite(v) ? String(v) : NULL) : v == null ? NULL : copyText(String(v));
// A stored payload's JSON was made once while it was sanitized (projection-rows.ts).
const asJson: Encoder = (v) => (v == null ? NULL : copyText(storedPayloadJson(v)));

/** Each column's encoder, chosen once per column list instead of per value. */
const encoders = new WeakMap<ColumnList, { names: string[]; encode: Encoder[] }>();
function encodersOf(columns: ColumnList): { names: string[]; encode: Encoder[] } {
  let e = encoders.get(columns);
  if (!e) {
    e = {
      names: columns.map(([c]) => c),
      encode: columns.map(([, t]) =>
        t === "jsonb" || t === "json" ? asJson : t === "text" ? asText : asNumber,
      ),
    };
    encoders.set(columns, e);
  }
  return e;
}

/** One batch of rows as COPY text, one line per row. */
export function copyLines(rows: readonly object[], columns: ColumnList): string {
  const { names, encode } = encodersOf(columns);
  const width = names.length;
  let out = "";
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r] as Record<string, unknown>;
    out += encode[0]!(row[names[0]!]);
    for (let k = 1; k < width; k++) out += `\t${encode[k]!(row[names[k]!])}`;
    out += "\n";
  }
  return out;
}

/** Runs one `copy … from stdin` statement with `text` as its input. */
async function copyInto(client: pg.ClientBase, sql: string, text: string): Promise<void> {
  const stream = client.query(copyFrom(sql));
  await new Promise<void>((resolve, reject) => {
    stream.on("finish", resolve);
    stream.on("error", reject);
    stream.end(text);
  });
}

/**
 * COPY into a temporary staging table of this connection (no indexes, no WAL, emptied at
 * commit), then one INSERT … SELECT … ON CONFLICT DO NOTHING into the table: every row stays
 * idempotent on its keys exactly as with a single-statement insert. `text` is the rows' COPY text
 * when the caller has it already.
 */
export async function stageAndInsert(
  client: pg.ClientBase,
  schema: string,
  table: string,
  rows: readonly object[] | undefined,
  columns: ColumnList,
  text?: string,
): Promise<number> {
  if (!rows || rows.length === 0) return 0;
  const stage = `geode_stage_${table}`;
  let ready = staged.get(client);
  if (!ready) {
    ready = new Set();
    staged.set(client, ready);
  }
  const cols = columns.map(([c]) => quote(c)).join(", ");
  if (!ready.has(stage)) {
    const defs = columns.map(([c, t]) => `${quote(c)} ${t}`).join(", ");
    await client.query(`drop table if exists pg_temp.${stage}`);
    await client.query(`create temp table ${stage} (${defs}) on commit delete rows`);
    ready.add(stage);
  }
  await copyInto(client, `copy pg_temp.${stage} (${cols}) from stdin`, text ?? copyLines(rows, columns));
  const r = await client.query(
    `insert into ${quote(schema)}.${quote(table)} (${cols}) select ${cols} from pg_temp.${stage} on conflict do nothing`,
  );
  return r.rowCount ?? 0;
}

/**
 * The rows of one table, idempotently: COPY straight into the table under a savepoint, which is
 * all or nothing; when any row is already there (a unique violation: a redelivered batch, replay
 * over rows present, a replica's batch overlapping), back to the savepoint and through the
 * staging table with ON CONFLICT DO NOTHING. New rows, the common case of the recorder and of
 * every rebuild, are written once with no conflict checks beyond the table's own keys.
 */
export async function copyRows(
  client: pg.ClientBase,
  schema: string,
  table: string,
  rows: readonly object[] | undefined,
  columns: ColumnList,
): Promise<number> {
  if (!rows || rows.length === 0) return 0;
  const text = copyLines(rows, columns);
  const cols = columns.map(([c]) => quote(c)).join(", ");
  await client.query("savepoint geode_copy");
  try {
    await copyInto(client, `copy ${quote(schema)}.${quote(table)} (${cols}) from stdin`, text);
  } catch (err) {
    if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
    await client.query("rollback to savepoint geode_copy");
    return stageAndInsert(client, schema, table, rows, columns, text);
  }
  await client.query("release savepoint geode_copy");
  return rows.length;
}

const UNIQUE_VIOLATION = "23505";

/** The batch in one transaction with the offset, by COPY (see writeBatch). */
export async function writeBatchByCopy(
  target: CopyTarget,
  batch: ProjectionBatch,
  columns: { activity: ColumnList; extension: ColumnList; session: ColumnList },
): Promise<BatchResult> {
  const client = await target.pool.connect();
  let broken: unknown;
  try {
    await client.query("begin");
    try {
      const s = target.schema;
      const activity = await copyRows(client, s, "activity_events", batch.activity, columns.activity);
      const extension = await copyRows(
        client,
        s,
        "extension_invocations",
        batch.extension,
        columns.extension,
      );
      const session = await copyRows(client, s, "session_events", batch.session, columns.session);
      await insertQuarantinedPg(client, s, batch.quarantined);
      await client.query(
        `insert into ${quote(s)}.projection_offsets (consumer, stream, last_seq, updated_at) values ($1, $2, $3, $4)
         on conflict (consumer, stream) do update set
           last_seq = greatest(projection_offsets.last_seq, excluded.last_seq), updated_at = excluded.updated_at`,
        [batch.consumer, batch.stream, batch.lastSeq, Date.now()],
      );
      await client.query("commit");
      return { activity, extension, session };
    } catch (err) {
      // The staging tables are made again on the next attempt (a changed table, a lost session).
      staged.delete(client);
      await client.query("rollback").catch((e: unknown) => {
        broken = e;
      });
      throw err;
    }
  } finally {
    client.release(broken instanceof Error ? broken : undefined);
  }
}
