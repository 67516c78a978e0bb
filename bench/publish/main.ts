/**
 * `pnpm bench publish`: the event publisher against bare `js.publish`, in one run, on a unique
 * namespace whose `{NS}_EVENTS` stream stores every message: the same `extension_invoked` envelope
 * (encoded once, a fresh `Nats-Msg-Id` per message) published
 *   - with `js.publish` of @nats-io/jetstream, which awaits each PubAck on a request of its own (the
 *     baseline);
 *   - with `JetStreamPublisher.publish`, the acks on one shared inbox (what RuntimeEventBus sends
 *     through);
 *   - with `RuntimeEventBus.emit`, which also builds and sanitizes the envelope and encodes it.
 * Sequential latency (each publish awaited until stored; the cases take turns 20 at a time), then
 * throughput at 1 and 64 publishes in flight, with ratios against the baseline.
 */
import { ensureEventStreams, JetStreamPublisher, RuntimeEventBus } from "@geode/bus";
import { names as buildNames, correlation, eventEnvelope } from "@geode/contracts";
import { cleanupNamespace, uniqueNamespace } from "@geode/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, headers } from "@nats-io/transport-node";
import {
  fmtLoad,
  fmtRate,
  fmtUs,
  measureThroughput,
  progress,
  summarize,
  table,
  warmThenInterleave,
} from "../lib/stats.js";

const SEQUENTIAL = Number(process.env["BENCH_N"] ?? 2_000);
const THROUGHPUT_TOTAL = Number(process.env["BENCH_TOTAL"] ?? 5_000);
const WARMUP = Number(process.env["BENCH_WARMUP"] ?? 1_000);
const CONCURRENCY = [1, 64];

const nc = await connect({ servers: process.env["NATS_URL"] ?? "nats://127.0.0.1:4222" });
const jsm = await jetstreamManager(nc);
const ns = uniqueNamespace("bench_publish");
const names = buildNames(ns);
await ensureEventStreams(nc, names);

const ids = correlation({ session_id: "s-bench", turn_id: "t-1", tool_call_id: "c-1" });
const payload = {
  surface: "hook",
  name: "PreToolUse",
  extension: "ci-gate",
  status: "ok",
  reason: "",
  duration_ms: 0.412,
};
const subject = names.event("extension_invoked");
const data = new TextEncoder().encode(
  JSON.stringify(eventEnvelope({ kind: "extension_invoked", source: "bench", payload, correlation: ids })),
);
let seq = 0;
const nextId = () => `bench-${++seq}`;

const js = jetstream(nc);
const publisher = new JetStreamPublisher({ nc });
const bus = await RuntimeEventBus.create({ nc, names, source: "bench", provision: false });

const cases: Array<{ label: string; run: () => Promise<unknown> }> = [
  { label: "js.publish (awaits each PubAck)", run: () => js.publish(subject, data, { msgID: nextId() }) },
  {
    label: "JetStreamPublisher.publish",
    run: async () => {
      const id = nextId();
      const h = headers();
      h.set("Nats-Msg-Id", id);
      if (!(await publisher.publish({ subject, id, data, headers: h }))) throw new Error("not stored");
    },
  },
  {
    label: "RuntimeEventBus.emit (envelope, sanitize, encode)",
    run: async () => {
      if ((await bus.emit("extension_invoked", payload, ids)) === null) throw new Error("not stored");
    },
  },
];

const { samples, rounds } = await warmThenInterleave(
  cases.map((c) => c.run),
  { warmup: WARMUP, sequential: SEQUENTIAL, perRound: 20 },
);
const latency = samples.map(summarize);
const rates: number[][] = cases.map(() => []);
for (const concurrency of CONCURRENCY)
  for (const [i, c] of cases.entries()) {
    progress(`${c.label}, ${concurrency} in flight`);
    rates[i]!.push(await measureThroughput(THROUGHPUT_TOTAL, concurrency, c.run));
  }

const base = latency[0]!.medianUs;
const rows = cases.map((c, i) => [
  c.label,
  fmtUs(latency[i]!.medianUs),
  fmtUs(latency[i]!.p99Us),
  (latency[i]!.medianUs / base).toFixed(2),
  ...rates[i]!.map(fmtRate),
  ...rates[i]!.map((r, k) => `${(r / rates[0]![k]!).toFixed(2)}×`),
]);
process.stdout.write(
  `${table(
    [
      "publish",
      "median",
      "p99",
      "÷ js.publish",
      ...CONCURRENCY.map((n) => `${n} in flight`),
      ...CONCURRENCY.map((n) => `× js.publish, ${n}`),
    ],
    rows,
  )}\n`,
);
process.stdout.write(
  `\n${rounds * 20} sequential publishes per case after ${WARMUP} warm-up each; ${THROUGHPUT_TOTAL} per throughput run; load average at the end: ${fmtLoad()}\n`,
);

await bus.close();
publisher.close();
await cleanupNamespace(jsm, ns);
await nc.drain();
