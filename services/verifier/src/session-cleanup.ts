import { ensureDurableConsumer, ensureEventStreams, type Logger } from "@geode/bus";
import { type Names, type TimelineKind, TimelineRecordSchema, VERIFIER_CONSUMERS } from "@geode/contracts";
import type { AttemptStore } from "@geode/state";
import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import { type NatsConnection, nanos } from "@nats-io/transport-node";

/** Which session a record ends: the session itself, or a sub-agent's child. */
const ENDING: ReadonlyArray<{
  kind: TimelineKind;
  consumer: string;
  sessionOf: (record: unknown) => string | null;
}> = [
  {
    kind: "session.ended",
    consumer: VERIFIER_CONSUMERS.sessionEnded,
    sessionOf: (r) => {
      const parsed = TimelineRecordSchema.safeParse(r);
      return parsed.success ? parsed.data.correlation.session_id : null;
    },
  },
  {
    kind: "subagent.stopped",
    consumer: VERIFIER_CONSUMERS.subagentStopped,
    sessionOf: (r) => {
      const parsed = TimelineRecordSchema.safeParse(r);
      const child = parsed.success ? parsed.data.payload["child_session_key"] : undefined;
      return typeof child === "string" ? child : null;
    },
  },
];

/** Redelivery delay after a failed clean-up (KV unreachable), ms. */
const RETRY_MS = 1_000;

export interface SessionCleanup {
  stop(): Promise<void>;
}

/**
 * Clears a session's verification state (its root turns in KV `{ns}_verify`) once the session has
 * durably ended: the verifier reads the `session.ended` and `subagent.stopped` records of the
 * timeline through durable consumers its replicas share, so a session that ended while no verifier
 * ran is cleared when one starts. The runtime never touches the verifier's bucket.
 */
export async function startSessionCleanup(options: {
  nc: NatsConnection;
  names: Names;
  attempts: AttemptStore;
  log: Logger;
}): Promise<SessionCleanup> {
  const { nc, names, attempts, log } = options;
  await ensureEventStreams(nc, names);
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const js = jetstream(nc);
  const stream = names.timelineStream;
  const loops: Array<{ messages: ConsumerMessages; done: Promise<void> }> = [];
  for (const ending of ENDING) {
    await ensureDurableConsumer(jsm, stream, {
      durable_name: ending.consumer,
      filter_subject: names.timeline(ending.kind),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(30_000),
      max_deliver: -1,
    });
    const consumer = await js.consumers.get(stream, ending.consumer);
    const messages = await consumer.consume({ max_messages: 100 });
    const clear = async (m: JsMsg) => {
      let record: unknown;
      try {
        record = m.json();
      } catch {
        record = undefined;
      }
      const sessionId = ending.sessionOf(record);
      if (sessionId === null) {
        log.warn({ stream, seq: m.seq }, "ignoring a malformed timeline record");
        m.term();
        return;
      }
      try {
        const cleared = await attempts.clearSession(sessionId);
        m.ack();
        if (cleared > 0) log.debug({ session_id: sessionId, turns: cleared }, "verification state cleared");
      } catch (err) {
        log.warn({ err, session_id: sessionId }, "could not clear verification state; retrying");
        m.nak(RETRY_MS);
      }
    };
    const done = (async () => {
      for await (const m of messages) await clear(m);
    })().catch((err: unknown) => log.error({ err, consumer: ending.consumer }, "session clean-up stopped"));
    loops.push({ messages, done });
  }
  return {
    async stop() {
      for (const loop of loops) await loop.messages.close().catch(() => undefined);
      await Promise.all(loops.map((l) => l.done));
    },
  };
}
