import { CORRELATION_FIELDS } from "@geode/contracts";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { type ColumnList, copyTargetOf, writeBatchByCopy } from "./copy-writer.js";
import type { BatchResult, ProjectionBatch } from "./projection-rows.js";
import type { ProjectionDatabase } from "./projection-schema.js";
import { insertQuarantined } from "./quarantined-messages.js";

export type { BatchResult, ProjectionBatch } from "./projection-rows.js";

const CORR_INT = new Set(["session_generation", "verify_attempt"]);
const corrColumns = CORRELATION_FIELDS.map((f) => [f, CORR_INT.has(f) ? "integer" : "text"] as const);

const ACTIVITY_COLUMNS = [
  ["stream_seq", "bigint"],
  ["event_id", "text"],
  ["event", "text"],
  ["ts", "bigint"],
  ["source", "text"],
  ...corrColumns,
  ["retention_bucket", "text"],
  ["payload", "jsonb"],
  ["trace_id", "text"],
] as const;
const EXTENSION_COLUMNS = [
  ["stream_seq", "bigint"],
  ["ts", "bigint"],
  ["surface", "text"],
  ["name", "text"],
  ["extension", "text"],
  ["status", "text"],
  ["latency_ms", "double precision"],
  ...corrColumns,
  ["trace_id", "text"],
] as const;
const SESSION_COLUMNS = [
  ["stream_seq", "bigint"],
  ["record_id", "text"],
  ["kind", "text"],
  ["ts", "bigint"],
  ["source", "text"],
  ...corrColumns,
  ["retention_bucket", "text"],
  ["payload", "jsonb"],
  ["payload_sha256", "text"],
] as const;

/**
 * `select … from json_to_recordset($1)`: the whole batch travels as ONE parameter, so a batch of
 * thousands of rows is one short statement (no 65,535-parameter limit, little parse work), and it
 * behaves the same on PostgreSQL and PGlite. `json` (not `jsonb`) because Postgres then reads each
 * row as it goes instead of first building a binary document of the whole batch; unnest of one
 * array per column costs Postgres about as little but node-pg more (see bench/recorder).
 */
function recordset(rows: readonly object[], columns: ColumnList): RawBuilder<unknown> {
  const json = JSON.stringify(rows);
  const defs = sql.raw(columns.map(([c, t]) => `"${c}" ${t}`).join(", "));
  const cols = sql.raw(columns.map(([c]) => `x."${c}"`).join(", "));
  return sql`select ${cols} from json_to_recordset(cast(cast(${json} as text) as json)) as x(${defs})`;
}

async function insertRows(
  trx: Kysely<ProjectionDatabase>,
  table: "activity_events" | "extension_invocations" | "session_events",
  rows: readonly object[] | undefined,
  columns: ColumnList,
): Promise<number> {
  if (!rows || rows.length === 0) return 0;
  const result = await trx
    .insertInto(table)
    // biome-ignore lint/suspicious/noExplicitAny: the column list is checked against the table above.
    .columns(columns.map(([c]) => c) as any)
    .expression(recordset(rows, columns))
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}

const COLUMNS = { activity: ACTIVITY_COLUMNS, extension: EXTENSION_COLUMNS, session: SESSION_COLUMNS };

/**
 * Writes one batch in ONE transaction together with the consumer's offset. Every row is
 * idempotent on its own key (stream sequence, and event/record id): a redelivered or replayed
 * row is a no-op, so replicas whose batches interleave never duplicate or lose a row. The
 * offset is a high-water mark (GREATEST), never moved backwards by a late batch. Messages found
 * refused for their content go into `quarantined_messages` in the same transaction. On PostgreSQL
 * proper the rows go by COPY (copy-writer.ts); on PGlite, also when it is reached by URL, as one
 * json_to_recordset statement per table.
 */
export async function writeBatch(
  db: Kysely<ProjectionDatabase>,
  batch: ProjectionBatch,
): Promise<BatchResult> {
  const copy = await copyTargetOf(db);
  if (copy) return writeBatchByCopy(copy, batch, COLUMNS);
  return db.transaction().execute(async (trx) => {
    const activity = await insertRows(trx, "activity_events", batch.activity, ACTIVITY_COLUMNS);
    const extension = await insertRows(trx, "extension_invocations", batch.extension, EXTENSION_COLUMNS);
    const session = await insertRows(trx, "session_events", batch.session, SESSION_COLUMNS);
    await insertQuarantined(trx, batch.quarantined);
    const now = Date.now();
    await trx
      .insertInto("projection_offsets")
      .values({ consumer: batch.consumer, stream: batch.stream, last_seq: batch.lastSeq, updated_at: now })
      .onConflict((oc) =>
        oc.columns(["consumer", "stream"]).doUpdateSet({
          last_seq: sql`greatest(projection_offsets.last_seq, excluded.last_seq)`,
          updated_at: sql`excluded.updated_at`,
        }),
      )
      .execute();
    return { activity, extension, session };
  });
}
