import { RETENTION_DAYS, type RetentionBucket } from "@geode/contracts";
import { type ProjectionDb, projectMessages, type StreamKind } from "@geode/projection";
import { sql } from "kysely";

const DAY_MS = 86_400_000;

/** A projection row that no longer matches its stream message. */
export interface RowDivergence {
  readonly table: string;
  readonly streamSeq: number;
  readonly how: "changed" | "deleted";
}

/** `changed row: activity_events stream_seq 12`, the line `--projection` names a row with. */
export function rowDivergenceText(d: RowDivergence): string {
  return `${d.how} row: ${d.table} stream_seq ${d.streamSeq}`;
}

/** A value in one comparable form: keys sorted, bigint columns as numbers, absent as null. */
function canonical(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === "string" && /^-?[0-9]+$/.test(v) && v.length < 16) return Number(v);
  if (Array.isArray(v)) return v.map(canonical);
  if (typeof v === "object")
    return Object.fromEntries(
      Object.keys(v as object)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  return v;
}

function same(expected: Record<string, unknown>, stored: Record<string, unknown>): boolean {
  for (const [k, v] of Object.entries(expected)) {
    const s = stored[k];
    const a = typeof v === "number" ? v : canonical(v);
    const b = typeof v === "number" && s !== null ? Number(s) : canonical(s);
    if (JSON.stringify(a) !== JSON.stringify(b)) return false;
  }
  return true;
}

/**
 * Checks the projection rows of one stream against its messages (DESIGN section 20, `--projection`):
 * each message the recorder has consumed (up to its offset) is decoded as the recorder decodes it,
 * and each row it makes must be stored as made. A row pruned past its retention bucket, and a
 * message the database quarantined, are not divergences.
 */
export class ProjectionCheck {
  readonly #pending: Array<{ seq: number; data: Uint8Array; headers?: { get(n: string): string } }> = [];
  #found: RowDivergence | undefined;

  private constructor(
    private readonly projection: ProjectionDb,
    private readonly kind: StreamKind,
    private readonly stream: string,
    private readonly upTo: number,
    private readonly quarantined: ReadonlySet<number>,
  ) {}

  static async open(projection: ProjectionDb, kind: StreamKind, stream: string): Promise<ProjectionCheck> {
    const offsets = await projection.db
      .selectFrom("projection_offsets")
      .select(["last_seq"])
      .where("stream", "=", stream)
      .execute();
    const upTo = Math.max(0, ...offsets.map((o) => Number(o.last_seq)));
    const q = await projection.db
      .selectFrom("quarantined_messages")
      .select(["stream_seq"])
      .where("stream", "=", stream)
      .execute();
    return new ProjectionCheck(projection, kind, stream, upTo, new Set(q.map((r) => Number(r.stream_seq))));
  }

  /** The first divergent row found so far. */
  get found(): RowDivergence | undefined {
    return this.#found;
  }

  async add(m: { seq: number; data: Uint8Array; headers?: { get(n: string): string } }): Promise<void> {
    if (this.#found || m.seq > this.upTo || this.quarantined.has(m.seq)) return;
    this.#pending.push(m);
    if (this.#pending.length >= 500) await this.flush();
  }

  async flush(): Promise<void> {
    const msgs = this.#pending.splice(0);
    if (msgs.length === 0 || this.#found) return;
    const batch = projectMessages(this.kind, this.stream, msgs);
    const from = msgs[0]!.seq;
    const to = msgs.at(-1)!.seq;
    const tables: Array<[string, Array<Record<string, unknown>>]> =
      this.kind === "events"
        ? [
            ["activity_events", batch.activity as unknown as Array<Record<string, unknown>>],
            ["extension_invocations", batch.extension as unknown as Array<Record<string, unknown>>],
          ]
        : [["session_events", batch.session as unknown as Array<Record<string, unknown>>]];
    const now = Date.now();
    for (const [name, expected] of tables) {
      const r = await sql<Record<string, unknown>>`
        select * from ${sql.id(this.projection.ns, name)}
        where stream_seq >= ${from} and stream_seq <= ${to} order by stream_seq`.execute(
        this.projection.root,
      );
      const stored = new Map(r.rows.map((row) => [Number(row["stream_seq"]), row]));
      for (const row of expected) {
        const seq = Number(row["stream_seq"]);
        const got = stored.get(seq);
        if (!got) {
          const bucket = (row["retention_bucket"] ?? "audit") as RetentionBucket;
          const pruned = Number(row["ts"]) < now - (RETENTION_DAYS[bucket] ?? RETENTION_DAYS.audit) * DAY_MS;
          if (pruned) continue;
          this.#found = { table: name, streamSeq: seq, how: "deleted" };
          return;
        }
        if (!same(row, got)) {
          this.#found = { table: name, streamSeq: seq, how: "changed" };
          return;
        }
      }
    }
  }
}
