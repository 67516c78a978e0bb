import { parseArgs } from "node:util";
import { decodeJson } from "@geode/bus";
import {
  EventEnvelopeSchema,
  isRuntimeEvent,
  type Names,
  RUNTIME_EVENTS,
  TIMELINE_KINDS,
  type TimelineKind,
  TimelineRecordSchema,
} from "@geode/contracts";
import { SessionStore } from "@geode/state";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import { type CommandModule, intOption, UsageError } from "../command.js";
import { connectFromEnv } from "./replay.js";

const SUMMARY_CHARS = 96;

/** A short, one-line view of a payload (already sanitized on the wire). */
function summarizePayload(payload: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(payload)) {
    if (k === "_redacted_fields") continue;
    const text = typeof v === "string" ? v : JSON.stringify(v);
    parts.push(`${k}=${text.length > 40 ? `${text.slice(0, 39)}…` : text}`);
  }
  const line = parts.join(" ").replace(/\s+/g, " ");
  return line.length > SUMMARY_CHARS ? `${line.slice(0, SUMMARY_CHARS - 1)}…` : line;
}

/**
 * One human-readable line: time, event, source, session/turn, short payload summary, and for an
 * agent's session the agent kind (`agent_kind=codex`) when the summary does not name it already.
 */
function formatEventLine(
  e: {
    ts: number;
    name: string;
    source: string;
    session_id: string;
    turn_id: string;
    payload: Record<string, unknown>;
  },
  agentKind: string | undefined,
): string {
  const time = new Date(e.ts).toISOString().replace("T", " ").replace("Z", "");
  const where = `${e.session_id || "-"}/${e.turn_id || "-"}`;
  const summary = summarizePayload(e.payload);
  const kind = agentKind && !summary.includes(`agent_kind=${agentKind}`) ? ` agent_kind=${agentKind}` : "";
  return `${time}  ${e.name.padEnd(28)} ${e.source.padEnd(18)} ${where.padEnd(24)} ${summary}${kind}\n`;
}

/** The agent kind of each session, as its record in KV `{ns}_sessions` says (looked up once per session). */
function sessionKinds(sessions: SessionStore): (sessionId: string) => Promise<string | undefined> {
  const known = new Map<string, string | undefined>();
  return async (sessionId) => {
    if (sessionId === "") return undefined;
    if (!known.has(sessionId)) {
      if (known.size >= 10_000) known.clear();
      known.set(sessionId, (await sessions.get(sessionId).catch(() => null))?.agent_kind);
    }
    return known.get(sessionId);
  };
}

/** Refuses an `--event` that is no runtime event (or, with `--timeline`, no timeline kind). */
function checkEventName(event: string, timeline: boolean): void {
  const ok = timeline ? (TIMELINE_KINDS as readonly string[]).includes(event) : isRuntimeEvent(event);
  if (!ok)
    throw new UsageError(
      `unknown ${timeline ? "timeline kind" : "event"}: ${event} (one of ${(timeline ? TIMELINE_KINDS : RUNTIME_EVENTS).join(", ")})`,
    );
}

/** The subject to follow: one event or kind, or all of them. */
function subjectOf(n: Names, event: string | undefined, timeline: boolean): string {
  if (event === undefined) return timeline ? n.timelineAll : n.eventsAll;
  return timeline ? n.timeline(event as TimelineKind) : n.event(event as (typeof RUNTIME_EVENTS)[number]);
}

/** The line to print for one stream message; undefined for one that is not valid or of another session. */
async function lineOf(
  data: Uint8Array,
  timeline: boolean,
  session: string | undefined,
  kindOf: ReturnType<typeof sessionKinds>,
): Promise<string | undefined> {
  let body: unknown;
  try {
    body = decodeJson(data);
  } catch {
    return undefined;
  }
  if (timeline) {
    const r = TimelineRecordSchema.safeParse(body);
    if (!r.success) return undefined;
    const t = r.data;
    if (session !== undefined && t.correlation.session_id !== session) return undefined;
    return formatEventLine({ ...t, name: t.kind, ...t.correlation }, await kindOf(t.correlation.session_id));
  }
  const r = EventEnvelopeSchema.safeParse(body);
  if (!r.success) return undefined;
  const e = r.data;
  if (session !== undefined && e.correlation.session_id !== session) return undefined;
  return formatEventLine({ ...e, name: e.event, ...e.correlation }, await kindOf(e.correlation.session_id));
}

export const eventsTailCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: {
        event: { type: "string" },
        session: { type: "string" },
        timeline: { type: "boolean", default: false },
        "from-seq": { type: "string" },
        limit: { type: "string" },
      },
    });
    if (values.event !== undefined) checkEventName(values.event, values.timeline);
    const fromSeq = intOption(values["from-seq"], "from-seq");
    const limit = intOption(values.limit, "limit") ?? Number.POSITIVE_INFINITY;

    const { nc, names: n } = await connectFromEnv(io, "geode-events-tail");
    const stream = values.timeline ? n.timelineStream : n.eventsStream;
    const subject = subjectOf(n, values.event, values.timeline);
    const oc = await jetstream(nc).consumers.get(stream, {
      filter_subjects: subject,
      ...(fromSeq !== undefined
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq }
        : { deliver_policy: DeliverPolicy.New }),
    });
    const kindOf = sessionKinds(await SessionStore.open({ nc, names: n }));
    const iter = await oc.consume();
    // Said on stderr, so a quiet namespace is not mistaken for a hang and stdout stays the events.
    const from =
      fromSeq !== undefined ? `from sequence ${fromSeq}` : "new ones only (--from-seq N for older)";
    const who = values.session !== undefined ? `, session ${values.session}` : "";
    io.err(`waiting for ${subject} on stream ${stream} (namespace ${n.ns}${who}), ${from}; Ctrl-C stops\n`);
    const onSignal = () => void iter.close();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    let printed = 0;
    try {
      for await (const m of iter) {
        const line = await lineOf(m.data, values.timeline, values.session, kindOf);
        if (line === undefined) continue;
        io.out(line);
        if (++printed >= limit) break;
      }
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      await iter.close();
      await nc.drain();
    }
    return 0;
  },
};
