import type { ConsumerConfig, JetStreamClient, JsMsg } from "@nats-io/jetstream";

/** Messages one fetch asks for: a fetch costs a round trip before its first message. */
const BATCH = 10_000;

/**
 * Reads a stream in order with an ordered consumer, a batch at a time, until `lastSeq` (what the
 * stream held when the reading began) or a batch that brings nothing: `each` returns false to
 * stop, and is awaited only when it returns a promise. Each fetch asks for no more than is left up
 * to `lastSeq`, and is read to its end (it ends by itself when it has them, or after its expiry
 * when messages were deleted).
 */
export async function readStream(
  js: JetStreamClient,
  stream: string,
  start: Partial<ConsumerConfig>,
  lastSeq: number,
  each: (m: JsMsg) => Promise<boolean> | boolean,
): Promise<void> {
  const consumer = await js.consumers.get(stream, start);
  let next = start.opt_start_seq ?? 1;
  let stopped = false;
  while (!stopped && next <= lastSeq) {
    const want = Math.max(1, Math.min(BATCH, lastSeq - next + 1));
    const batch = await consumer.fetch({ max_messages: want, expires: 1_000 });
    let got = 0;
    for await (const m of batch) {
      got++;
      next = m.seq + 1;
      if (stopped) continue;
      if (m.seq > lastSeq) {
        stopped = true;
        continue;
      }
      const more = each(m);
      if (!(typeof more === "boolean" ? more : await more) || m.seq >= lastSeq) stopped = true;
    }
    if (got === 0) return;
  }
}
