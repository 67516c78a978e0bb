import { decodeJson } from "@geode/bus";
import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/** Where a read starts: after a stream sequence, or at a time. */
type ReadStart = { afterSeq: number } | { since: Date };

export interface StreamRead {
  stream: string;
  subject: string;
  start: ReadStart;
}

const INACTIVE_NS = 30_000 * 1_000_000;

async function ephemeral(nc: NatsConnection, jsm: JetStreamManager, read: StreamRead) {
  const deliver =
    "since" in read.start
      ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: read.start.since.toISOString() }
      : read.start.afterSeq > 0
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: read.start.afterSeq + 1 }
        : { deliver_policy: DeliverPolicy.All };
  const info = await jsm.consumers.add(read.stream, {
    ack_policy: AckPolicy.None,
    filter_subject: read.subject,
    mem_storage: true,
    inactive_threshold: INACTIVE_NS,
    ...deliver,
  });
  const consumer = await jetstream(nc).consumers.get(read.stream, info.name);
  return { name: info.name, pending: info.num_pending, consumer };
}

const isMissingStream = (err: unknown) => err instanceof Error && /stream not found/i.test(err.message);

/**
 * Reads what a stream holds now (from `start`, on `subject`) through an ephemeral consumer, and
 * stops at the end or when `visit` returns false. Returns the last sequence read (the cursor to go
 * on from). A stream that does not exist yet reads as empty.
 */
export async function readStream(
  nc: NatsConnection,
  read: StreamRead,
  visit: (body: unknown, seq: number) => boolean,
): Promise<{ lastSeq: number | null }> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  let e: Awaited<ReturnType<typeof ephemeral>>;
  try {
    e = await ephemeral(nc, jsm, read);
  } catch (err) {
    if (isMissingStream(err)) return { lastSeq: null };
    throw err;
  }
  let lastSeq: number | null = null;
  try {
    if (e.pending === 0) return { lastSeq };
    const iter = await e.consumer.consume({ max_messages: 256 });
    try {
      for await (const m of iter) {
        lastSeq = m.seq;
        const go = visit(bodyOf(m), m.seq);
        if (!go || m.info.pending === 0) break;
      }
    } finally {
      await iter.close();
    }
    return { lastSeq };
  } finally {
    await jsm.consumers.delete(read.stream, e.name).catch(() => undefined);
  }
}

/** Follows a stream live (from `start`) until `close()`; `visit` sees each message. */
export async function followStream(
  nc: NatsConnection,
  read: StreamRead,
  visit: (body: unknown, seq: number) => void,
): Promise<{ close(): Promise<void> }> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const e = await ephemeral(nc, jsm, read);
  const iter: ConsumerMessages = await e.consumer.consume({ max_messages: 256 });
  const done = (async () => {
    for await (const m of iter) visit(bodyOf(m), m.seq);
  })().catch(() => undefined);
  return {
    async close() {
      await iter.close();
      await done;
      await jsm.consumers.delete(read.stream, e.name).catch(() => undefined);
    },
  };
}

function bodyOf(m: JsMsg): unknown {
  try {
    return decodeJson(m.data);
  } catch {
    return undefined;
  }
}
