import {
  CORRELATION_FIELDS,
  type Correlation,
  compiledParser,
  EventEnvelopeSchema,
  parseTraceparent,
  type RetentionBucket,
  retentionBucketOf,
  safeCorrelationId,
  sanitizePayloadJson,
  sha256,
  TimelineRecordSchema,
  TRACEPARENT_HEADER,
  wellFormedJsonText,
} from "@geode/contracts";
import type { QuarantinedRow } from "./quarantined-messages.js";

/** Correlation ids as row columns, named like their fields. */
type CorrelationRow = Correlation;

/** One `activity_events` row as the projection stores it and the run JSONL mirrors it. */
export interface ActivityEventRow extends CorrelationRow {
  stream_seq: number;
  event_id: string;
  event: string;
  ts: number;
  source: string;
  retention_bucket: RetentionBucket;
  payload: Record<string, unknown>;
  /** The W3C trace id of the request that caused the event (its `traceparent` header), or null. */
  trace_id: string | null;
}

/** One `extension_invocations` row: no payload text at all. */
export interface ExtensionInvocationRow extends CorrelationRow {
  stream_seq: number;
  ts: number;
  surface: string;
  name: string;
  extension: string;
  status: string;
  latency_ms: number;
  trace_id: string | null;
}

/** One `session_events` row. */
export interface SessionEventRow extends CorrelationRow {
  stream_seq: number;
  record_id: string;
  kind: string;
  ts: number;
  source: string;
  retention_bucket: RetentionBucket;
  payload: Record<string, unknown>;
  payload_sha256: string;
}

/** What one stream message turns into. */
export type DecodedMessage =
  | { type: "event"; activity: ActivityEventRow; extension?: ExtensionInvocationRow }
  | { type: "timeline"; session: SessionEventRow }
  /** Stored nowhere, on purpose (e.g. a `tool_exec_failed` duplicating a stored `tool_exec_ended`). */
  | { type: "skipped"; reason: string }
  /** Not a valid message of its stream: stored nowhere, acked, counted. */
  | { type: "rejected"; reason: string };

export type StreamKind = "events" | "timeline";

/** Timeline kinds kept as long as audit events; the rest are operational (retention buckets of docs/protocol.md#runtime-events). */
export function timelineRetentionOf(kind: string): RetentionBucket {
  return kind.startsWith("verification.") ? "audit" : "ops";
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Postgres text and jsonb cannot hold U+0000: it is removed from every stored string. */
function noNul(s: string): string {
  return s.includes("\0") ? s.replaceAll("\0", "") : s;
}

function stripNulDeep(v: unknown): unknown {
  if (typeof v === "string") return noNul(v);
  if (Array.isArray(v)) return v.map(stripNulDeep);
  if (v !== null && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [noNul(k), stripNulDeep(x)]));
  return v;
}

/**
 * Stored payloads' compact JSON, made once while they were sanitized: the COPY writer sends it and
 * timeline rows hash it, instead of serializing each payload again. Payloads are not changed
 * after they are made, so the text stays theirs.
 */
const payloadJson = new WeakMap<object, string>();

/** The compact JSON of a row's payload (made once by `storedPayload`, or now). */
export function storedPayloadJson(payload: unknown): string {
  return (
    (typeof payload === "object" && payload !== null && payloadJson.get(payload)) || JSON.stringify(payload)
  );
}

/**
 * Bounds a payload for storage: sanitized again (the recorder does not trust publishers to have
 * done it), and free of U+0000. `mayHoldNul: false` skips the NUL pass when the caller knows
 * there is none (the message text had no `\u0000` escape, the only way JSON carries one).
 */
export function storedPayload(payload: unknown, mayHoldNul = true): Record<string, unknown> {
  const { payload: clean, json } = sanitizePayloadJson(payload);
  if (mayHoldNul && json.includes("\\u0000")) return stripNulDeep(clean) as Record<string, unknown>;
  payloadJson.set(clean, json);
  return clean;
}

/**
 * Copies the correlation ids onto a row (no object of their own: one allocation less per message),
 * each made safe as the gateway makes agents' ids (the recorder does not trust publishers to have
 * done it): no secret, path or oversized id is stored or mirrored.
 */
function putCorrelation(row: Record<string, unknown>, c: Correlation): void {
  for (const f of CORRELATION_FIELDS) {
    const v = c[f];
    row[f] = typeof v === "string" ? safeCorrelationId(v) : v;
  }
}

/** An audit reason is stored cut to this many characters (as the dispatcher cuts it). */
const AUDIT_REASON_CHARS = 512;

function short(v: unknown): string {
  return typeof v === "string" ? noNul([...v].slice(0, 128).join("")) : "";
}

/**
 * The `extension_invoked` fields of an `extension_invocations` row: surface, name, extension,
 * status and latency, nothing else. Request hashes and anything a publisher added are dropped
 * everywhere; the event's `reason` (a decision's reason or audit note, an error's type) is kept
 * only in its `activity_events` payload, cut to 512 characters and sanitized again, so an operator
 * can see why a prompt or a call was refused.
 */
function extensionFields(p: Record<string, unknown>) {
  const ms = p["duration_ms"];
  return {
    surface: short(p["surface"]),
    name: short(p["name"]),
    extension: short(p["extension"]),
    status: short(p["status"]),
    latency_ms: typeof ms === "number" && Number.isFinite(ms) ? ms : 0,
  };
}

/**
 * The envelopes and records the schema would return unchanged (nearly all, as publishers write
 * them), taken without its pass, about a third of the decoding; the schema decides the rest and
 * rejects with its reason.
 */
const parseEnvelope = compiledParser(EventEnvelopeSchema);
const parseRecord = compiledParser(TimelineRecordSchema);

function parseBody(
  data: Uint8Array,
): { ok: true; body: unknown; mayHoldNul: boolean } | { ok: false; reason: string } {
  try {
    // A lone surrogate (an escape of another publisher's) becomes U+FFFD: Postgres refuses it.
    const text = wellFormedJsonText(decoder.decode(data));
    // JSON strings cannot hold a raw U+0000, only the escape: without it, no string needs cleaning.
    return { ok: true, body: JSON.parse(text) as unknown, mayHoldNul: text.includes("\\u0000") };
  } catch {
    return { ok: false, reason: "not UTF-8 JSON" };
  }
}

/** Turns one message of `{NS}_EVENTS` or `{NS}_TIMELINE` into the rows it projects to. */
export function decodeStreamMessage(
  stream: StreamKind,
  streamSeq: number,
  data: Uint8Array,
  traceId: string | null = null,
): DecodedMessage {
  const parsed = parseBody(data);
  if (!parsed.ok) return { type: "rejected", reason: parsed.reason };
  if (stream === "events") {
    const r = parseEnvelope(parsed.body);
    if (!r.success) return { type: "rejected", reason: "not an event envelope" };
    const e = r.data;
    // The tool-executor's compatibility tool_exec_failed names the tool_exec_ended it repeats.
    if (
      e.event === "tool_exec_failed" &&
      typeof e.payload["ended_event_id"] === "string" &&
      e.payload["ended_event_id"] !== ""
    )
      return { type: "skipped", reason: "duplicates tool_exec_ended" };
    // Built field by field in the table's column order: one object per row, no spreads.
    const activity = {
      stream_seq: streamSeq,
      event_id: noNul(e.id),
      event: e.event,
      ts: e.ts,
      source: noNul(e.source),
    } as Record<string, unknown>;
    putCorrelation(activity, e.correlation);
    activity["retention_bucket"] = retentionBucketOf(e.event);
    activity["trace_id"] = traceId;
    if (e.event !== "extension_invoked") {
      activity["payload"] = storedPayload(e.payload, parsed.mayHoldNul);
      return { type: "event", activity: activity as unknown as ActivityEventRow };
    }
    const f = extensionFields(e.payload);
    const kept: Record<string, unknown> = {
      surface: f.surface,
      name: f.name,
      extension: f.extension,
      status: f.status,
      duration_ms: f.latency_ms,
    };
    const reason = e.payload["reason"];
    // Only a reason is free text (the other fields are already cut and cleaned): only then sanitize.
    if (typeof reason === "string" && reason !== "") {
      kept["reason"] = [...reason].slice(0, AUDIT_REASON_CHARS).join("");
      activity["payload"] = storedPayload(kept, parsed.mayHoldNul);
    } else activity["payload"] = kept;
    const extension = { stream_seq: streamSeq, ts: e.ts, ...f } as Record<string, unknown>;
    putCorrelation(extension, e.correlation);
    extension["trace_id"] = traceId;
    return {
      type: "event",
      activity: activity as unknown as ActivityEventRow,
      extension: extension as unknown as ExtensionInvocationRow,
    };
  }
  const r = parseRecord(parsed.body);
  if (!r.success) return { type: "rejected", reason: "not a timeline record" };
  const t = r.data;
  const payload = storedPayload(t.payload, parsed.mayHoldNul);
  const session = {
    stream_seq: streamSeq,
    record_id: noNul(t.id),
    kind: t.kind,
    ts: t.ts,
    source: noNul(t.source),
  } as Record<string, unknown>;
  putCorrelation(session, t.correlation);
  session["retention_bucket"] = timelineRetentionOf(t.kind);
  session["payload"] = payload;
  // The hash of what is stored (sha256 of its compact JSON), so a reader can check the row.
  session["payload_sha256"] = sha256(storedPayloadJson(payload));
  return { type: "timeline", session: session as unknown as SessionEventRow };
}

/** One stored row in consumption order, tagged with its table and stream (the run JSONL line). */
export type ProjectedRow =
  | { type: "activity_events"; stream: string; row: ActivityEventRow }
  | { type: "session_events"; stream: string; row: SessionEventRow };

/** A batch of stream messages decoded into table rows. */
export interface ProjectedBatch {
  activity: ActivityEventRow[];
  extension: ExtensionInvocationRow[];
  session: SessionEventRow[];
  /** Activity and session rows in stream order (what the run JSONL mirrors). */
  rows: ProjectedRow[];
  skipped: number;
  rejects: Array<{ seq: number; reason: string }>;
  /** Highest stream sequence of the batch, stored or not. */
  lastSeq: number;
}

/** The headers of a stream message, as far as the projection reads them. */
export interface MessageHeaders {
  get(name: string): string;
}

/** The trace id of a message's `traceparent` header; null without a valid one. */
function traceIdOf(h: MessageHeaders | undefined): string | null {
  return h ? (parseTraceparent(h.get(TRACEPARENT_HEADER))?.traceId ?? null) : null;
}

/** Decodes a batch of messages of one stream (recorder and replay share it, row for row). */
export function projectMessages(
  kind: StreamKind,
  stream: string,
  msgs: ReadonlyArray<{ seq: number; data: Uint8Array; headers?: MessageHeaders | undefined }>,
): ProjectedBatch {
  const out: ProjectedBatch = {
    activity: [],
    extension: [],
    session: [],
    rows: [],
    skipped: 0,
    rejects: [],
    lastSeq: 0,
  };
  for (const m of msgs) {
    out.lastSeq = Math.max(out.lastSeq, m.seq);
    const d = decodeStreamMessage(kind, m.seq, m.data, traceIdOf(m.headers));
    switch (d.type) {
      case "event":
        out.activity.push(d.activity);
        if (d.extension) out.extension.push(d.extension);
        out.rows.push({ type: "activity_events", stream, row: d.activity });
        break;
      case "timeline":
        out.session.push(d.session);
        out.rows.push({ type: "session_events", stream, row: d.session });
        break;
      case "skipped":
        out.skipped++;
        break;
      case "rejected":
        out.rejects.push({ seq: m.seq, reason: d.reason });
        break;
    }
  }
  return out;
}

/** The rows of one consumed batch and the offset it advances. */
export interface ProjectionBatch {
  /** Durable consumer name (or `replay`). */
  consumer: string;
  /** Stream name, e.g. `GEODE_EVENTS`. */
  stream: string;
  /** Highest stream sequence in the batch (stored rows or not). */
  lastSeq: number;
  activity?: ActivityEventRow[];
  extension?: ExtensionInvocationRow[];
  session?: SessionEventRow[];
  /** Messages of the batch PostgreSQL refused for their content, in place of their rows. */
  quarantined?: QuarantinedRow[];
}

/** Rows actually inserted by a batch (the rest were already there). */
export interface BatchResult {
  activity: number;
  extension: number;
  session: number;
}
