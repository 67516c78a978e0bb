import { parseArgs } from "node:util";
import { decodeJson } from "@geode/bus";
import {
  EventEnvelopeSchema,
  isRuntimeEvent,
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
    if (values.event !== undefined) {
      const ok = values.timeline
        ? (TIMELINE_KINDS as readonly string[]).includes(values.event)
        : isRuntimeEvent(values.event);
      if (!ok)
        throw new UsageError(
          `unknown ${values.timeline ? "timeline kind" : "event"}: ${values.event} (one of ${(values.timeline ? TIMELINE_KINDS : RUNTIME_EVENTS).join(", ")})`,
        );
    }
    const fromSeq = intOption(values["from-seq"], "from-seq");
    const limit = intOption(values.limit, "limit") ?? Number.POSITIVE_INFINITY;

    const { nc, names: n } = await connectFromEnv(io, "geode-events-tail");
    const stream = values.timeline ? n.timelineStream : n.eventsStream;
    const subject =
      values.event === undefined
        ? values.timeline
          ? n.timelineAll
          : n.eventsAll
        : values.timeline
          ? n.timeline(values.event as TimelineKind)
          : n.event(values.event as (typeof RUNTIME_EVENTS)[number]);
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
        let body: unknown;
        try {
          body = decodeJson(m.data);
        } catch {
          continue;
        }
        if (values.timeline) {
          const r = TimelineRecordSchema.safeParse(body);
          if (!r.success) continue;
          const t = r.data;
          if (values.session !== undefined && t.correlation.session_id !== values.session) continue;
          io.out(
            formatEventLine({ ...t, name: t.kind, ...t.correlation }, await kindOf(t.correlation.session_id)),
          );
        } else {
          const r = EventEnvelopeSchema.safeParse(body);
          if (!r.success) continue;
          const e = r.data;
          if (values.session !== undefined && e.correlation.session_id !== values.session) continue;
          io.out(
            formatEventLine(
              { ...e, name: e.event, ...e.correlation },
              await kindOf(e.correlation.session_id),
            ),
          );
        }
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
