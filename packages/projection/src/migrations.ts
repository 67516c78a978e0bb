import { type Kysely, type Migration, Migrator, sql } from "kysely";

const CORRELATION_TEXT = ["session_id", "turn_id", "step_id", "run_id"] as const;
const CORRELATION_TEXT_TAIL = ["tool_call_id", "llm_call_id", "llm_attempt_id"] as const;

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against the untyped builder.
type CreateTable = ReturnType<Kysely<any>["schema"]["createTable"]>;

function withCorrelation(t: CreateTable): CreateTable {
  let b = t;
  for (const c of CORRELATION_TEXT) b = b.addColumn(c, "text", (col) => col.notNull().defaultTo(""));
  b = b.addColumn("session_generation", "integer", (col) => col.notNull().defaultTo(0));
  b = b.addColumn("verify_attempt", "integer", (col) => col.notNull().defaultTo(0));
  for (const c of CORRELATION_TEXT_TAIL) b = b.addColumn(c, "text", (col) => col.notNull().defaultTo(""));
  return b;
}

/** `activity_events`: one row per runtime event, with its indexes. */
// biome-ignore lint/suspicious/noExplicitAny: see above.
async function createActivityEvents(db: Kysely<any>): Promise<void> {
  await withCorrelation(
    db.schema
      .createTable("activity_events")
      .addColumn("stream_seq", "bigint", (c) => c.primaryKey())
      .addColumn("event_id", "text", (c) => c.notNull().unique())
      .addColumn("event", "text", (c) => c.notNull())
      .addColumn("ts", "bigint", (c) => c.notNull())
      .addColumn("source", "text", (c) => c.notNull()),
  )
    .addColumn("retention_bucket", "text", (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("activity_events_session_ts")
    .on("activity_events")
    .columns(["session_id", "ts"])
    .execute();
  await db.schema
    .createIndex("activity_events_run")
    .on("activity_events")
    .columns(["run_id", "stream_seq"])
    // Runs are opt-in: most events carry no run id, and they cost this index nothing.
    .where(sql.ref("run_id"), "<>", "")
    .execute();
  await db.schema
    .createIndex("activity_events_event_ts")
    .on("activity_events")
    .columns(["event", "ts"])
    .execute();
  await db.schema
    .createIndex("activity_events_retention")
    .on("activity_events")
    .columns(["retention_bucket", "ts"])
    .execute();
}

/** `extension_invocations`: one row per audited handler or middleware call. */
// biome-ignore lint/suspicious/noExplicitAny: see above.
async function createExtensionInvocations(db: Kysely<any>): Promise<void> {
  await withCorrelation(
    db.schema
      .createTable("extension_invocations")
      .addColumn("stream_seq", "bigint", (c) => c.primaryKey())
      .addColumn("ts", "bigint", (c) => c.notNull())
      .addColumn("surface", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("extension", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("latency_ms", "double precision", (c) => c.notNull()),
  ).execute();
  await db.schema
    .createIndex("extension_invocations_session_ts")
    .on("extension_invocations")
    .columns(["session_id", "ts"])
    .execute();
  await db.schema.createIndex("extension_invocations_ts").on("extension_invocations").column("ts").execute();
}

/** `session_events`: one row per timeline record. */
// biome-ignore lint/suspicious/noExplicitAny: see above.
async function createSessionEvents(db: Kysely<any>): Promise<void> {
  await withCorrelation(
    db.schema
      .createTable("session_events")
      .addColumn("stream_seq", "bigint", (c) => c.primaryKey())
      .addColumn("record_id", "text", (c) => c.notNull().unique())
      .addColumn("kind", "text", (c) => c.notNull())
      .addColumn("ts", "bigint", (c) => c.notNull())
      .addColumn("source", "text", (c) => c.notNull()),
  )
    .addColumn("retention_bucket", "text", (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("payload_sha256", "text", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("session_events_session_ts")
    .on("session_events")
    .columns(["session_id", "ts"])
    .execute();
  await db.schema
    .createIndex("session_events_retention")
    .on("session_events")
    .columns(["retention_bucket", "ts"])
    .execute();
}

/** `projection_offsets`: how far each consumer has projected each stream. */
// biome-ignore lint/suspicious/noExplicitAny: see above.
async function createProjectionOffsets(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("projection_offsets")
    .addColumn("consumer", "text", (c) => c.notNull())
    .addColumn("stream", "text", (c) => c.notNull())
    .addColumn("last_seq", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("projection_offsets_pk", ["consumer", "stream"])
    .execute();
}

/**
 * Every row is keyed by its stream sequence (primary key) and, where the message has one, its
 * id (unique): inserts use ON CONFLICT DO NOTHING, so redelivery, replica races and replay never
 * duplicate a row. Indexes serve the operator queries (by session, run, event) and prune
 * (retention bucket + ts).
 */
const initial: Migration = {
  // biome-ignore lint/suspicious/noExplicitAny: see above.
  async up(db: Kysely<any>) {
    await createActivityEvents(db);
    await createExtensionInvocations(db);
    await createSessionEvents(db);
    await createProjectionOffsets(db);
  },
  // biome-ignore lint/suspicious/noExplicitAny: see above.
  async down(db: Kysely<any>) {
    for (const t of ["projection_offsets", "session_events", "extension_invocations", "activity_events"])
      await db.schema.dropTable(t).ifExists().execute();
  },
};

/**
 * The secondary indexes (the keys excluded), as the initial migration makes them. `geode replay
 * --rebuild` on PostgreSQL drops them while it loads the empty tables and makes them again at the
 * end, also when the load fails: one sort per index instead of an index update per row. Every
 * migration run makes any that is still missing (a rebuild that was killed), so the next start of
 * the recorder or of replay brings them back.
 */
export const SECONDARY_INDEXES: ReadonlyArray<{ name: string; table: string; on: string }> = [
  { name: "activity_events_session_ts", table: "activity_events", on: `("session_id", "ts")` },
  {
    name: "activity_events_run",
    table: "activity_events",
    on: `("run_id", "stream_seq") where "run_id" <> ''`,
  },
  { name: "activity_events_event_ts", table: "activity_events", on: `("event", "ts")` },
  { name: "activity_events_retention", table: "activity_events", on: `("retention_bucket", "ts")` },
  { name: "extension_invocations_session_ts", table: "extension_invocations", on: `("session_id", "ts")` },
  { name: "extension_invocations_ts", table: "extension_invocations", on: `("ts")` },
  { name: "session_events_session_ts", table: "session_events", on: `("session_id", "ts")` },
  { name: "session_events_retention", table: "session_events", on: `("retention_bucket", "ts")` },
];

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * Makes each secondary index that does not exist. The catalog is read first and only a missing
 * index is created: `create index if not exists` takes its table's SHARE lock before it looks,
 * which would hold up every writer behind each process start (the recorder, replay, the CLI).
 */
// biome-ignore lint/suspicious/noExplicitAny: works on any database handle.
export async function ensureSecondaryIndexes(db: Kysely<any>, ns: string): Promise<void> {
  const present = await sql<{ indexname: string }>`
    select indexname from pg_indexes where schemaname = ${ns}`.execute(db);
  const have = new Set(present.rows.map((r) => r.indexname));
  for (const i of SECONDARY_INDEXES)
    if (!have.has(i.name))
      await sql
        .raw(`create index if not exists ${ident(i.name)} on ${ident(ns)}.${ident(i.table)} ${i.on}`)
        .execute(db);
}

/** Drops the secondary indexes (for a bulk load into empty tables; see SECONDARY_INDEXES). */
// biome-ignore lint/suspicious/noExplicitAny: works on any database handle.
export async function dropSecondaryIndexes(db: Kysely<any>, ns: string): Promise<void> {
  for (const i of SECONDARY_INDEXES)
    await sql.raw(`drop index if exists ${ident(ns)}.${ident(i.name)}`).execute(db);
}

/**
 * The W3C trace id of the request behind each event and handler call (the event's `traceparent`
 * header), so a row leads to its trace. Nullable: rows written before, and events published
 * outside any request, have none. Adding a nullable column without a default rewrites nothing.
 */
const traceIds: Migration = {
  // biome-ignore lint/suspicious/noExplicitAny: see above.
  async up(db: Kysely<any>) {
    for (const t of ["activity_events", "extension_invocations"])
      await db.schema.alterTable(t).addColumn("trace_id", "text").execute();
  },
  // biome-ignore lint/suspicious/noExplicitAny: see above.
  async down(db: Kysely<any>) {
    for (const t of ["activity_events", "extension_invocations"])
      await db.schema.alterTable(t).dropColumn("trace_id").execute();
  },
};

/**
 * The dead-letter table of the projection: one row per stream message PostgreSQL refused for its
 * content (quarantined-messages.ts), keyed like the rows it stands for, so the recorder and
 * replay record a message once. No payload text: its hash, and the stream keeps the message.
 */
const quarantinedMessages: Migration = {
  // biome-ignore lint/suspicious/noExplicitAny: see above.
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("quarantined_messages")
      .addColumn("stream", "text", (c) => c.notNull())
      .addColumn("stream_seq", "bigint", (c) => c.notNull())
      .addColumn("subject", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("session_id", "text", (c) => c.notNull())
      .addColumn("consumer", "text", (c) => c.notNull())
      .addColumn("sqlstate", "text", (c) => c.notNull())
      .addColumn("error", "text", (c) => c.notNull())
      .addColumn("message_sha256", "text", (c) => c.notNull())
      .addColumn("message_bytes", "integer", (c) => c.notNull())
      .addColumn("quarantined_at", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("quarantined_messages_pk", ["stream", "stream_seq"])
      .execute();
  },
  // biome-ignore lint/suspicious/noExplicitAny: see above.
  async down(db: Kysely<any>) {
    await db.schema.dropTable("quarantined_messages").ifExists().execute();
  },
};

/** The projection's migrations, in order (kept in code so every entry point runs the same set). */
export const PROJECTION_MIGRATIONS: Record<string, Migration> = {
  "001_initial": initial,
  "002_trace_ids": traceIds,
  "003_quarantined_messages": quarantinedMessages,
};

function isRaceError(err: unknown): boolean {
  // Two replicas creating the same schema or migration table at once: retry once the other won.
  const code = (err as { code?: string } | undefined)?.code;
  return code === "23505" || code === "42P06" || code === "42P07";
}

/**
 * Creates schema `ns` if absent and brings its tables to the latest migration. Safe to run from
 * several replicas at once (Kysely's migration lock, plus a retry for the schema-creation race).
 */
// biome-ignore lint/suspicious/noExplicitAny: works on any database handle.
export async function migrateProjection(db: Kysely<any>, ns: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await db.schema.createSchema(ns).ifNotExists().execute();
      const migrator = new Migrator({
        db: db.withSchema(ns),
        provider: { getMigrations: async () => PROJECTION_MIGRATIONS },
        migrationTableSchema: ns,
      });
      const { error } = await migrator.migrateToLatest();
      if (error) throw error;
      await ensureSecondaryIndexes(db, ns);
      return;
    } catch (err) {
      if (attempt >= 5 || !isRaceError(err)) throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

/** Drops schema `ns` with everything in it, the audit tables too (used by `geode ns rm`). */
// biome-ignore lint/suspicious/noExplicitAny: works on any database handle.
export async function dropProjection(db: Kysely<any>, ns: string): Promise<void> {
  await sql`drop schema if exists ${sql.id(ns)} cascade`.execute(db);
}

/**
 * The tables of the projection's migrations, their migration bookkeeping included: what `geode
 * replay --rebuild` drops. Nothing else of schema `{ns}` is the projection's: the notary's
 * `audit_*` tables (DESIGN section 20) hold hashes of messages the streams may have aged out, so
 * a rebuild can never make them again and keeps them.
 */
const REBUILT_TABLES = [
  "activity_events",
  "extension_invocations",
  "session_events",
  "projection_offsets",
  "quarantined_messages",
  "kysely_migration",
  "kysely_migration_lock",
] as const;

/** Drops the projection's tables of schema `ns` (REBUILT_TABLES) and nothing else in it. */
// biome-ignore lint/suspicious/noExplicitAny: works on any database handle.
export async function dropProjectionTables(db: Kysely<any>, ns: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (const t of REBUILT_TABLES) await sql`drop table if exists ${sql.id(ns, t)}`.execute(tx);
  });
}
