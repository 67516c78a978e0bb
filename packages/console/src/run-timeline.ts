import {
  type ConsoleTimelineItem,
  EventEnvelopeSchema,
  type Names,
  TimelineRecordSchema,
} from "@geode/contracts";
import type { NatsConnection } from "@nats-io/transport-node";
import { followStream, readStream } from "./stream-reader.js";

/** One entry of a run's timeline: a runtime event or a session timeline record. */
export type TimelineItem = ConsoleTimelineItem;

/** Where a reader of a run's timeline stands in each stream (last sequence read, 0 for none). */
export interface TimelineCursor {
  events: number;
  timeline: number;
}

/** The cursor as one token, `E.T` (an SSE event id; `Last-Event-ID` on reconnect). */
export const cursorToken = (c: TimelineCursor) => `${c.events}.${c.timeline}`;

export function parseCursorToken(token: string | undefined | null): TimelineCursor | null {
  const m = /^(\d{1,15})\.(\d{1,15})$/.exec(token ?? "");
  return m ? { events: Number(m[1]), timeline: Number(m[2]) } : null;
}

/** A stream message as a timeline item of `runId`, or null (another run, or not a record). */
function itemOf(
  stream: TimelineItem["stream"],
  body: unknown,
  seq: number,
  runId: string,
): TimelineItem | null {
  if (stream === "events") {
    const r = EventEnvelopeSchema.safeParse(body);
    if (!r.success || r.data.correlation.run_id !== runId) return null;
    const e = r.data;
    return {
      stream,
      seq,
      id: e.id,
      name: e.event,
      ts: e.ts,
      source: e.source,
      correlation: e.correlation,
      payload: e.payload,
    };
  }
  const r = TimelineRecordSchema.safeParse(body);
  if (!r.success || r.data.correlation.run_id !== runId) return null;
  const t = r.data;
  return {
    stream,
    seq,
    id: t.id,
    name: t.kind,
    ts: t.ts,
    source: t.source,
    correlation: t.correlation,
    payload: t.payload,
  };
}

/**
 * The order of a run's timeline: by time; within one stream, by sequence. Sequences of the two
 * streams are not comparable, so an event and a timeline record of the same millisecond go event
 * first (an event records a step; the record that follows it in that millisecond is its outcome).
 */
export function timelineOrder(a: TimelineItem, b: TimelineItem): number {
  if (a.ts !== b.ts) return a.ts - b.ts;
  if (a.stream === b.stream) return a.seq - b.seq;
  return a.stream === "events" ? -1 : 1;
}

/**
 * One page of a run's timeline from the streams (`{NS}_EVENTS` and `{NS}_TIMELINE`, the source of
 * truth), after `cursor`: at most `limit` items, oldest first, and the cursor to go on from.
 * Streams are scanned for the run's correlation id, so a long stream costs a longer read.
 */
export async function readRunTimeline(
  nc: NatsConnection,
  names: Names,
  runId: string,
  cursor: TimelineCursor,
  limit: number,
): Promise<{ items: TimelineItem[]; next: TimelineCursor; more: boolean }> {
  const read = async (stream: TimelineItem["stream"]) => {
    const items: TimelineItem[] = [];
    const { lastSeq } = await readStream(
      nc,
      {
        stream: stream === "events" ? names.eventsStream : names.timelineStream,
        subject: stream === "events" ? names.eventsAll : names.timelineAll,
        start: { afterSeq: cursor[stream] },
      },
      (body, seq) => {
        const item = itemOf(stream, body, seq, runId);
        if (item) items.push(item);
        return items.length < limit;
      },
    );
    return { items, lastSeq: lastSeq ?? cursor[stream], full: items.length >= limit };
  };
  const [events, timeline] = await Promise.all([read("events"), read("timeline")]);
  const merged = [...events.items, ...timeline.items].sort(timelineOrder);
  const items = merged.slice(0, limit);
  // A stream whose items were all kept goes on after what it scanned; one cut short, after its last kept item.
  const next: TimelineCursor = { ...cursor };
  let more = events.full || timeline.full;
  for (const [stream, got] of [
    ["events", events],
    ["timeline", timeline],
  ] as const) {
    const kept = items.filter((i) => i.stream === stream);
    if (kept.length === got.items.length) next[stream] = got.lastSeq;
    else {
      next[stream] = kept.at(-1)?.seq ?? cursor[stream];
      more = true;
    }
  }
  return { items, next, more };
}

/**
 * Follows a run's timeline live after `cursor` (both streams), calling `send` with each item and
 * the cursor that follows it. Items of the two streams arrive in each stream's own order.
 */
export async function followRunTimeline(
  nc: NatsConnection,
  names: Names,
  runId: string,
  cursor: TimelineCursor,
  send: (item: TimelineItem, cursor: TimelineCursor) => void,
): Promise<{ close(): Promise<void> }> {
  const at = { ...cursor };
  const follow = (stream: TimelineItem["stream"]) =>
    followStream(
      nc,
      {
        stream: stream === "events" ? names.eventsStream : names.timelineStream,
        subject: stream === "events" ? names.eventsAll : names.timelineAll,
        start: { afterSeq: cursor[stream] },
      },
      (body, seq) => {
        at[stream] = seq;
        const item = itemOf(stream, body, seq, runId);
        if (item) send(item, { ...at });
      },
    );
  const events = await follow("events");
  let timeline: Awaited<ReturnType<typeof follow>>;
  try {
    timeline = await follow("timeline");
  } catch (err) {
    await events.close();
    throw err;
  }
  return {
    async close() {
      await Promise.all([events.close(), timeline.close()]);
    },
  };
}
