import type { ConsumerConfig, JetStreamClient, JsMsg } from "@nats-io/jetstream";

/**
 * Reads a stream in order with an ordered consumer, a batch at a time, until `lastSeq` (what the
 * stream held when the reading began) or a batch that brings nothing: `each` returns false to stop.
 */
export async function readStream(
  js: JetStreamClient,
  stream: string,
  start: Partial<ConsumerConfig>,
  lastSeq: number,
  each: (m: JsMsg) => Promise<boolean> | boolean,
): Promise<void> {
  const consumer = await js.consumers.get(stream, start);
  for (;;) {
    const batch = await consumer.fetch({ max_messages: 1_000, expires: 2_000 });
    let got = 0;
    for await (const m of batch) {
      got++;
      if (m.seq > lastSeq || !(await each(m)) || m.seq >= lastSeq) {
        await batch.close();
        return;
      }
    }
    if (got === 0) return;
  }
}
