import {
  type FrontierSnapshot,
  HASH_SIZE,
  type HashStore,
  MerkleFrontier,
  type TreeNode,
} from "@geode/audit";
import type { AuditLogName } from "@geode/contracts";
import { AuditTreeStore } from "@geode/projection";
import { type Kysely, type Migration, Migrator, sql } from "kysely";

// biome-ignore lint/suspicious/noExplicitAny: the audit tables are written through raw SQL.
type Db = Kysely<any>;

/**
 * The audit tables of schema `{ns}` (DESIGN section 20), beside the projection and never part of
 * it: `geode replay --rebuild` keeps them, since they hold the hashes of messages the streams may
 * have aged out.
 * - `audit_tree`: every complete subtree of each log's tree (its leaf hashes at level 0 and each
 *   node a leaf closed above them), so any leaf can be proven at any size.
 * - `audit_logs`: per log its first stream sequence, size, last sequence, gap count and frontier.
 * - `audit_checkpoints`: every signed checkpoint, the note exactly as it was signed.
 */
const initial: Migration = {
  async up(db: Db) {
    await db.schema
      .createTable("audit_tree")
      .addColumn("log", "text", (c) => c.notNull())
      .addColumn("level", "smallint", (c) => c.notNull())
      .addColumn("idx", "bigint", (c) => c.notNull())
      .addColumn("hash", "bytea", (c) => c.notNull())
      .addPrimaryKeyConstraint("audit_tree_pk", ["log", "level", "idx"])
      .execute();
    await db.schema
      .createTable("audit_logs")
      .addColumn("log", "text", (c) => c.primaryKey())
      .addColumn("origin", "text", (c) => c.notNull())
      .addColumn("stream", "text", (c) => c.notNull())
      .addColumn("first_seq", "bigint", (c) => c.notNull())
      .addColumn("size", "bigint", (c) => c.notNull())
      .addColumn("last_seq", "bigint", (c) => c.notNull())
      .addColumn("gaps", "bigint", (c) => c.notNull())
      .addColumn("frontier", "jsonb", (c) => c.notNull())
      .addColumn("updated_at", "bigint", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("audit_checkpoints")
      .addColumn("log", "text", (c) => c.notNull())
      .addColumn("size", "bigint", (c) => c.notNull())
      .addColumn("root", "text", (c) => c.notNull())
      .addColumn("note", "text", (c) => c.notNull())
      .addColumn("signed_at", "bigint", (c) => c.notNull())
      .addColumn("published_at", "bigint")
      .addPrimaryKeyConstraint("audit_checkpoints_pk", ["log", "size"])
      .execute();
  },
  async down(db: Db) {
    for (const t of ["audit_checkpoints", "audit_logs", "audit_tree"])
      await db.schema.dropTable(t).ifExists().execute();
  },
};

/** The latest range of missing sequences per log, so the console can name it after a restart. */
const lastGap: Migration = {
  async up(db: Db) {
    await db.schema
      .alterTable("audit_logs")
      .addColumn("last_gap_from", "bigint")
      .addColumn("last_gap_to", "bigint")
      .execute();
  },
  async down(db: Db) {
    await db.schema.alterTable("audit_logs").dropColumn("last_gap_from").dropColumn("last_gap_to").execute();
  },
};

const AUDIT_MIGRATIONS: Record<string, Migration> = { "001_audit": initial, "002_audit_last_gap": lastGap };

function isRaceError(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return code === "23505" || code === "42P06" || code === "42P07";
}

/**
 * Creates schema `ns` if absent and the audit tables in it, with their own migration bookkeeping
 * (`audit_migration`), so the projection's migrations and its rebuild never touch them. Safe from
 * several replicas at once.
 */
export async function migrateAudit(db: Db, ns: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await db.schema.createSchema(ns).ifNotExists().execute();
      const migrator = new Migrator({
        db: db.withSchema(ns),
        provider: { getMigrations: async () => AUDIT_MIGRATIONS },
        migrationTableSchema: ns,
        migrationTableName: "audit_migration",
        migrationLockTableName: "audit_migration_lock",
      });
      const { error } = await migrator.migrateToLatest();
      if (error) throw error;
      return;
    } catch (err) {
      if (attempt >= 5 || !isRaceError(err)) throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

/** One log as stored: where its tree starts in the stream and how far it got. */
export interface StoredLog {
  readonly log: AuditLogName;
  /** The stream sequence of leaf 0 (leaf index = sequence − first sequence). */
  readonly firstSeq: number;
  readonly size: number;
  /** The last stream sequence appended (firstSeq − 1 while empty). */
  readonly lastSeq: number;
  readonly gaps: number;
  readonly frontier: MerkleFrontier;
}

/** A signed checkpoint as stored. */
export interface StoredCheckpoint {
  readonly log: AuditLogName;
  readonly size: number;
  /** Base64 root hash. */
  readonly root: string;
  readonly note: string;
  readonly signedAt: number;
  readonly publishedAt: number | null;
}

/** A batch refused because the log is no longer at the size this writer had: another one wrote. */
export class LogMovedError extends Error {
  override readonly name = "LogMovedError";
}

const table = (ns: string, name: string) => sql.id(ns, name);

/** Nodes as runs of consecutive indexes on one level, their hashes concatenated in run order. */
function nodeRuns(nodes: readonly TreeNode[]): {
  levels: number[];
  firsts: string[];
  counts: number[];
  ats: number[];
  hashes: Buffer;
} {
  const sorted = [...nodes].sort((a, b) => a.level - b.level || a.index - b.index);
  const runs = {
    levels: [] as number[],
    firsts: [] as string[],
    counts: [] as number[],
    ats: [] as number[],
  };
  const hashes = Buffer.allocUnsafe(sorted.length * HASH_SIZE);
  let last: TreeNode | undefined;
  sorted.forEach((n, i) => {
    hashes.set(n.hash, i * HASH_SIZE);
    if (last && n.level === last.level && n.index === last.index + 1) runs.counts[runs.counts.length - 1]!++;
    else {
      runs.levels.push(n.level);
      runs.firsts.push(String(n.index));
      runs.counts.push(1);
      runs.ats.push(i);
    }
    last = n;
  });
  return { ...runs, hashes };
}

/** Reads and writes one namespace's audit tables. */
export class AuditStore {
  constructor(
    readonly db: Db,
    readonly ns: string,
  ) {}

  /** The stored log, created empty at `firstSeq` when it is not stored yet (first start). */
  async openLog(
    log: AuditLogName,
    init: { origin: string; stream: string; firstSeq: number },
  ): Promise<StoredLog> {
    const empty: FrontierSnapshot = { size: 0, hashes: [] };
    await sql`
      insert into ${table(this.ns, "audit_logs")}
        (log, origin, stream, first_seq, size, last_seq, gaps, frontier, updated_at)
      values (${log}, ${init.origin}, ${init.stream}, ${init.firstSeq}, 0, ${init.firstSeq - 1}, 0,
        ${JSON.stringify(empty)}::jsonb, ${Date.now()})
      on conflict (log) do nothing`.execute(this.db);
    const stored = await this.readLog(log);
    if (!stored) throw new Error(`audit log ${log} vanished while it was opened`);
    return stored;
  }

  /** The stored log, or undefined when the notary never started it. */
  async readLog(log: AuditLogName): Promise<StoredLog | undefined> {
    const r = await sql<{
      first_seq: string;
      size: string;
      last_seq: string;
      gaps: string;
      frontier: unknown;
    }>`select first_seq, size, last_seq, gaps, frontier from ${table(this.ns, "audit_logs")}
       where log = ${log}`.execute(this.db);
    const row = r.rows[0];
    if (!row) return undefined;
    const frontier = MerkleFrontier.restore(row.frontier);
    if (frontier.size !== Number(row.size)) throw new Error(`audit log ${log}: frontier and size disagree`);
    return {
      log,
      firstSeq: Number(row.first_seq),
      size: Number(row.size),
      lastSeq: Number(row.last_seq),
      gaps: Number(row.gaps),
      frontier,
    };
  }

  /**
   * Appends one batch in one statement (so one transaction): the new nodes of the tree and the
   * log's new size, last sequence and frontier (and the batch's latest gap range, when it has
   * one). The log row is updated only while it is still at `from.size`, and the nodes are inserted
   * only with that update, else LogMovedError and nothing is written: two writers (a notary that
   * lost its lease and the one that took over) can never fork or duplicate the tree. The nodes go
   * as runs of consecutive indexes per level and one byte string of their hashes (a batch's nodes
   * are one run per level), not as one array element per node.
   */
  async append(
    log: AuditLogName,
    from: { size: number },
    to: {
      lastSeq: number;
      gaps: number;
      frontier: MerkleFrontier;
      lastGap?: { from: number; to: number } | undefined;
    },
    nodes: readonly TreeNode[],
  ): Promise<void> {
    const runs = nodeRuns(nodes);
    const r = await sql<{ moved: number }>`
      with moved as (
        update ${table(this.ns, "audit_logs")}
        set size = ${to.frontier.size}, last_seq = ${to.lastSeq}, gaps = ${to.gaps},
          frontier = ${JSON.stringify(to.frontier.snapshot())}::jsonb, updated_at = ${Date.now()}
          ${to.lastGap ? sql`, last_gap_from = ${to.lastGap.from}, last_gap_to = ${to.lastGap.to}` : sql``}
        where log = ${log} and size = ${from.size}
        returning log),
      added as (
        insert into ${table(this.ns, "audit_tree")} (log, level, idx, hash)
        select moved.log, run.level, run.first + i,
          substring(${runs.hashes}::bytea from (run.at + i) * ${HASH_SIZE} + 1 for ${HASH_SIZE})
        from moved,
          unnest(${runs.levels}::smallint[], ${runs.firsts}::bigint[], ${runs.counts}::int[], ${runs.ats}::int[])
            as run(level, first, n, at),
          generate_series(0, run.n - 1) as i
        returning 1)
      select (select count(*) from moved)::int as moved, (select count(*) from added)::int as added`.execute(
      this.db,
    );
    if (r.rows[0]?.moved !== 1) {
      const stored = await this.readLog(log).catch(() => undefined);
      throw new LogMovedError(`audit log ${log} is at ${stored?.size ?? "nothing"}, not ${from.size}`);
    }
  }

  /** Keeps a signed checkpoint (a repeat of one already kept changes nothing). */
  async putCheckpoint(c: Omit<StoredCheckpoint, "publishedAt">): Promise<void> {
    await sql`
      insert into ${table(this.ns, "audit_checkpoints")} (log, size, root, note, signed_at)
      values (${c.log}, ${c.size}, ${c.root}, ${c.note}, ${c.signedAt})
      on conflict (log, size) do nothing`.execute(this.db);
  }

  /** Marks a checkpoint as stored by JetStream. */
  async markPublished(log: AuditLogName, size: number): Promise<void> {
    await sql`
      update ${table(this.ns, "audit_checkpoints")} set published_at = ${Date.now()}
      where log = ${log} and size = ${size}`.execute(this.db);
  }

  /** The latest checkpoint of a log, or undefined before the first. */
  async latestCheckpoint(log: AuditLogName): Promise<StoredCheckpoint | undefined> {
    return (await this.checkpoints(log, { latest: true }))[0];
  }

  /** Checkpoints not yet stored by JetStream (a publish that failed), oldest first. */
  async unpublished(log: AuditLogName): Promise<StoredCheckpoint[]> {
    return this.checkpoints(log, { unpublished: true });
  }

  /** Every checkpoint of a log, by size. */
  async checkpoints(
    log: AuditLogName,
    options: { latest?: boolean; unpublished?: boolean } = {},
  ): Promise<StoredCheckpoint[]> {
    const r = await sql<{
      size: string;
      root: string;
      note: string;
      signed_at: string;
      published_at: string | null;
    }>`select size, root, note, signed_at, published_at from ${table(this.ns, "audit_checkpoints")}
       where log = ${log} ${options.unpublished ? sql`and published_at is null` : sql``}
       order by size ${options.latest ? sql`desc limit 1` : sql`asc`}`.execute(this.db);
    return r.rows.map((row) => ({
      log,
      size: Number(row.size),
      root: row.root,
      note: row.note,
      signedAt: Number(row.signed_at),
      publishedAt: row.published_at === null ? null : Number(row.published_at),
    }));
  }

  /** The hash store of one log's tree. */
  hashStore(log: AuditLogName): HashStore {
    return new AuditTreeStore(this.db, this.ns, log);
  }
}
