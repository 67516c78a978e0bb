import type { Correlation, RetentionBucket } from "@geode/contracts";
import type { ColumnType } from "kysely";

/**
 * `bigint` columns: pg returns them as strings, PGlite as numbers; writers pass numbers and
 * readers normalize with `Number()` (epoch ms and stream sequences fit in 2^53).
 */
type BigintColumn = ColumnType<number | string, number, number>;

type CorrelationColumns = {
  [K in keyof Correlation]: Correlation[K] extends number ? ColumnType<number, number, number> : string;
};

/** One runtime event (stream `{NS}_EVENTS`), keyed by its stream sequence. */
export interface ActivityEventsTable extends CorrelationColumns {
  stream_seq: BigintColumn;
  event_id: string;
  event: string;
  /** Epoch ms, as on the wire. */
  ts: BigintColumn;
  source: string;
  retention_bucket: RetentionBucket;
  payload: ColumnType<Record<string, unknown>, string, string>;
  /** W3C trace id of the request that caused the event (migration 002); null without one. */
  trace_id: string | null;
}

/** Payload-free audit row of one `extension_invoked` event (docs/protocol.md#projection: nothing else). */
export interface ExtensionInvocationsTable extends CorrelationColumns {
  stream_seq: BigintColumn;
  ts: BigintColumn;
  surface: string;
  name: string;
  extension: string;
  status: string;
  latency_ms: ColumnType<number, number, number>;
  trace_id: string | null;
}

/** One session timeline record (stream `{NS}_TIMELINE`). */
export interface SessionEventsTable extends CorrelationColumns {
  stream_seq: BigintColumn;
  record_id: string;
  kind: string;
  ts: BigintColumn;
  source: string;
  retention_bucket: RetentionBucket;
  payload: ColumnType<Record<string, unknown>, string, string>;
  payload_sha256: string;
}

/** High-water mark of each consumer on each stream. */
export interface ProjectionOffsetsTable {
  consumer: string;
  stream: string;
  last_seq: BigintColumn;
  updated_at: BigintColumn;
}

/** A stream message PostgreSQL refused for its content (migration 003; docs/operations.md). */
export interface QuarantinedMessagesTable {
  stream: string;
  stream_seq: BigintColumn;
  subject: string;
  /** The event or timeline kind, as far as the message names one ("" otherwise). */
  name: string;
  session_id: string;
  /** Who quarantined it: the recorder's durable consumer, or `replay`. */
  consumer: string;
  sqlstate: string;
  /** PostgreSQL's message, one line, masked and cut to 512 characters. */
  error: string;
  /** SHA-256 of the message's bytes as the stream holds them. */
  message_sha256: string;
  message_bytes: ColumnType<number, number, number>;
  quarantined_at: BigintColumn;
}

/** The projection's tables, all in schema `{ns}`. */
export interface ProjectionDatabase {
  activity_events: ActivityEventsTable;
  extension_invocations: ExtensionInvocationsTable;
  session_events: SessionEventsTable;
  projection_offsets: ProjectionOffsetsTable;
  quarantined_messages: QuarantinedMessagesTable;
}

export const PROJECTION_TABLES = [
  "activity_events",
  "extension_invocations",
  "session_events",
  "projection_offsets",
] as const satisfies ReadonlyArray<keyof ProjectionDatabase>;
export type ProjectionTable = (typeof PROJECTION_TABLES)[number];
