import { createHash } from "node:crypto";
import { sanitizeText } from "@geode/contracts";
import type { Kysely } from "kysely";
import type pg from "pg";
import { describeDbError, sqlStateOf } from "./errors.js";
import type { ProjectionDatabase } from "./projection-schema.js";

/** One `quarantined_messages` row: a message PostgreSQL refused for its content. */
export interface QuarantinedRow {
  stream: string;
  stream_seq: number;
  subject: string;
  name: string;
  session_id: string;
  consumer: string;
  sqlstate: string;
  error: string;
  message_sha256: string;
  message_bytes: number;
  quarantined_at: number;
}

const COLUMNS = [
  "stream",
  "stream_seq",
  "subject",
  "name",
  "session_id",
  "consumer",
  "sqlstate",
  "error",
  "message_sha256",
  "message_bytes",
  "quarantined_at",
] as const satisfies ReadonlyArray<keyof QuarantinedRow>;

/** PostgreSQL's message is kept this long: it may quote a little of the value it refused. */
const ERROR_CHARS = 512;
const SUBJECT_CHARS = 256;

/** Free text as the table keeps it: masked, cut, valid Unicode, no U+0000 (which text refuses). */
function keptText(s: string, max: number): string {
  return sanitizeText(s, max).replaceAll("\0", "");
}

/**
 * The row that stands for one refused message. Nothing of its payload is kept: its hash and size
 * (the stream holds the message itself), the event or kind and session as its decoded rows name
 * them (already validated and made safe), and PostgreSQL's reason.
 */
export function quarantineRow(input: {
  stream: string;
  consumer: string;
  message: { seq: number; data: Uint8Array; subject?: string | undefined };
  /** The message's decoded rows (a `ProjectedBatch` of it alone). */
  rows: {
    activity: ReadonlyArray<{ event: string; session_id: string }>;
    session: ReadonlyArray<{ kind: string; session_id: string }>;
  };
  err: unknown;
}): QuarantinedRow {
  const { message, rows } = input;
  const activity = rows.activity[0];
  const session = rows.session[0];
  return {
    stream: input.stream,
    stream_seq: message.seq,
    subject: keptText(message.subject ?? "", SUBJECT_CHARS),
    name: activity?.event ?? session?.kind ?? "",
    session_id: activity?.session_id ?? session?.session_id ?? "",
    consumer: input.consumer,
    sqlstate: sqlStateOf(input.err) ?? "",
    error: keptText(describeDbError(input.err), ERROR_CHARS),
    message_sha256: createHash("sha256").update(message.data).digest("hex"),
    message_bytes: message.data.byteLength,
    quarantined_at: Date.now(),
  };
}

/** Inserts quarantine rows in a Kysely transaction (once per message: a second is a no-op). */
export async function insertQuarantined(
  trx: Kysely<ProjectionDatabase>,
  rows: readonly QuarantinedRow[] | undefined,
): Promise<void> {
  if (!rows || rows.length === 0) return;
  await trx
    .insertInto("quarantined_messages")
    .values([...rows])
    .onConflict((oc) => oc.columns(["stream", "stream_seq"]).doNothing())
    .execute();
}

/** The same on a node-pg client inside its transaction (the COPY writer's). */
export async function insertQuarantinedPg(
  client: pg.ClientBase,
  schema: string,
  rows: readonly QuarantinedRow[] | undefined,
): Promise<void> {
  const cols = COLUMNS.join(", ");
  const params = COLUMNS.map((_, i) => `$${i + 1}`).join(", ");
  const table = `"${schema.replaceAll('"', '""')}".quarantined_messages`;
  for (const row of rows ?? [])
    await client.query(
      `insert into ${table} (${cols}) values (${params}) on conflict (stream, stream_seq) do nothing`,
      COLUMNS.map((c) => row[c]),
    );
}

/** How many messages are quarantined, and the latest few (the recorder's health note). */
export async function quarantineSummary(
  db: Kysely<ProjectionDatabase>,
  latest = 3,
): Promise<{ count: number; latest: Array<{ stream: string; stream_seq: number }> }> {
  const total = await db
    .selectFrom("quarantined_messages")
    .select((eb) => eb.fn.countAll().as("n"))
    .executeTakeFirstOrThrow();
  const rows = await db
    .selectFrom("quarantined_messages")
    .select(["stream", "stream_seq"])
    .orderBy("quarantined_at", "desc")
    .orderBy("stream_seq", "desc")
    .limit(latest)
    .execute();
  return {
    count: Number(total.n),
    latest: rows.map((r) => ({ stream: r.stream, stream_seq: Number(r.stream_seq) })),
  };
}
