import { RETENTION_DAYS, type RetentionBucket } from "@geode/contracts";
import type { Kysely } from "kysely";
import type { ProjectionDatabase, ProjectionTable } from "./projection-schema.js";

const DAY_MS = 86_400_000;

/** Rows deleted by a prune, per table. */
export type PruneCounts = Record<"activity_events" | "extension_invocations" | "session_events", number>;

/**
 * Deletes rows older than their retention bucket (audit 180 d, ops 30 d, debug 7 d) as of `now`.
 * `extension_invocations` rows are audit rows (docs/protocol.md#projection). Returns the count per table.
 */
export async function pruneExpired(db: Kysely<ProjectionDatabase>, now = Date.now()): Promise<PruneCounts> {
  const counts: PruneCounts = { activity_events: 0, extension_invocations: 0, session_events: 0 };
  await db.transaction().execute(async (trx) => {
    for (const [bucket, days] of Object.entries(RETENTION_DAYS) as Array<[RetentionBucket, number]>) {
      const cutoff = now - days * DAY_MS;
      const a = await trx
        .deleteFrom("activity_events")
        .where("retention_bucket", "=", bucket)
        .where("ts", "<", cutoff)
        .executeTakeFirst();
      counts.activity_events += Number(a.numDeletedRows);
      const s = await trx
        .deleteFrom("session_events")
        .where("retention_bucket", "=", bucket)
        .where("ts", "<", cutoff)
        .executeTakeFirst();
      counts.session_events += Number(s.numDeletedRows);
    }
    const e = await trx
      .deleteFrom("extension_invocations")
      .where("ts", "<", now - RETENTION_DAYS.audit * DAY_MS)
      .executeTakeFirst();
    counts.extension_invocations += Number(e.numDeletedRows);
  });
  return counts;
}

/** Row count of each projection table. */
export async function countRows(db: Kysely<ProjectionDatabase>): Promise<Record<ProjectionTable, number>> {
  const count = async (t: ProjectionTable) =>
    Number(
      (
        await db
          .selectFrom(t)
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    activity_events: await count("activity_events"),
    extension_invocations: await count("extension_invocations"),
    session_events: await count("session_events"),
    projection_offsets: await count("projection_offsets"),
  };
}

/** Offset high-water marks, normalized to numbers. */
export async function readOffsets(
  db: Kysely<ProjectionDatabase>,
): Promise<Array<{ consumer: string; stream: string; last_seq: number }>> {
  const rows = await db.selectFrom("projection_offsets").select(["consumer", "stream", "last_seq"]).execute();
  return rows.map((r) => ({ consumer: r.consumer, stream: r.stream, last_seq: Number(r.last_seq) }));
}

const NUMERIC_COLUMNS = ["stream_seq", "ts", "last_seq", "updated_at", "latency_ms"] as const;
type NumericColumn = (typeof NUMERIC_COLUMNS)[number];

/** A row as read back, with its bigint columns as numbers. */
export type Normalized<T> = { [K in keyof T]: K extends NumericColumn ? number : T[K] };

/** Converts a row read back from either driver: bigint columns become numbers. */
export function normalizeRow<T extends object>(row: T): Normalized<T> {
  const out = { ...row } as Record<string, unknown>;
  for (const k of NUMERIC_COLUMNS)
    if (k in out && out[k] !== null && out[k] !== undefined) out[k] = Number(out[k]);
  return out as Normalized<T>;
}
