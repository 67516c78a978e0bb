import { randomUUID } from "node:crypto";
import { type Correlation, type CorrelationInput, correlation as fillCorrelation } from "./correlation.js";
import type { EventEnvelope, RuntimeEvent, TimelineKind, TimelineRecord } from "./runtime-event.js";
import { sanitizePayload, sha256 } from "./sanitize.js";

/** What an event or a timeline record is made of, before its envelope. */
export interface EnvelopeInput<K> {
  /** The event (`extension_invoked`, …) or the timeline kind (`tool.completed`, …). */
  kind: K;
  /** Who publishes (`hook-dispatcher`, `runtime`, …). */
  source: string;
  /** Sanitized here (DESIGN's bounds and redaction). */
  payload: unknown;
  correlation?: CorrelationInput | Correlation | undefined;
  /** Default a new UUID; also its `Nats-Msg-Id`, so one published twice is stored once. */
  id?: string | undefined;
}

/** The envelope of a runtime event: a fresh id and time, the full correlation, the payload sanitized. */
export function eventEnvelope(input: EnvelopeInput<RuntimeEvent>): EventEnvelope {
  return {
    id: input.id ?? randomUUID(),
    event: input.kind,
    ts: Date.now(),
    source: input.source,
    correlation: fillCorrelation(input.correlation),
    payload: sanitizePayload(input.payload),
  };
}

/** A session timeline record: as an event's envelope, with the sanitized payload's SHA-256. */
export function timelineRecord(input: EnvelopeInput<TimelineKind>): TimelineRecord {
  const payload = sanitizePayload(input.payload);
  return {
    id: input.id ?? randomUUID(),
    kind: input.kind,
    ts: Date.now(),
    source: input.source,
    correlation: fillCorrelation(input.correlation),
    payload,
    payload_sha256: sha256(payload),
  };
}
