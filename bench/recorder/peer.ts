/**
 * The recorder's floor on the NATS side (`pnpm bench recorder` starts it): a process that takes a
 * stream through a durable pull consumer configured as the recorder's (explicit acks, the same
 * pull size) and acks every message, reading its sequence and headers as the recorder does, and
 * nothing else: no decoding, no database. Its CPU per message is what the NATS client alone costs
 * the recorder. Prints `ready`, then `done` once `count` messages are acked.
 * Args: <stream> <durable> <count> <batch>.
 */
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";

const [stream = "", durable = "", count = "0", batch = "1000"] = process.argv.slice(2);
const nc = await connect({ servers: process.env["NATS_URL"] ?? "nats://127.0.0.1:4222" });
const jsm = await jetstreamManager(nc);
await jsm.consumers.add(stream, {
  durable_name: durable,
  ack_policy: AckPolicy.Explicit,
  deliver_policy: DeliverPolicy.All,
  max_ack_pending: Math.max(10_000, Number(batch) * 10),
});
const c = await jetstream(nc).consumers.get(stream, durable);
process.stdout.write("ready\n");
let acked = 0;
let last = 0;
const iter = await c.consume({
  max_messages: Number(batch) * 2,
  callback: (m) => {
    last = Math.max(last, m.seq);
    void m.headers?.get("traceparent");
    m.ack();
    if (++acked === Number(count)) {
      void nc.flush().then(() => process.stdout.write(`done ${last}\n`));
    }
  },
});
process.on("SIGTERM", () => {
  void iter.close().then(() => nc.close().then(() => process.exit(0)));
});
