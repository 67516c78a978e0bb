/**
 * `pnpm bench replay-memory`: is memory flat over a long replay? Publishes `BENCH_EVENTS`
 * (default 1,000,000) small, valid events to a fresh namespace with the raw JetStream API (many
 * publishes in flight, no envelope building per event), then runs `geode replay --rebuild` as its
 * own process and samples its memory (RSS, V8 heap, external) while it goes, next to how far it
 * got (the replay's offset row). Prints one row per tenth of the stream and a verdict: the last
 * half's peak RSS against the first half's (flat means the second half needs no more memory than
 * the first: no growth with the length of the stream; the first tenth is warm-up).
 */
import { ensureEventStreams } from "@geode/bus";
import { names as buildNames } from "@geode/contracts";
import { openProjectionDb } from "@geode/projection";
import {
  cleanupNamespace,
  DEFAULT_DATABASE_URL,
  DEFAULT_NATS_URL,
  spawnService,
  uniqueNamespace,
} from "@geode/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { fmtRate, progress, table } from "../lib/stats.js";

const N = Number(process.env["BENCH_EVENTS"] ?? 1_000_000);
const WINDOW = Number(process.env["BENCH_WINDOW"] ?? 4_000);
const natsUrl = process.env["NATS_URL"] || DEFAULT_NATS_URL;
const databaseUrl = process.env["DATABASE_URL"] || DEFAULT_DATABASE_URL;
const ns = uniqueNamespace("benchmem");
const n = buildNames(ns);
const nc = await connect({ servers: natsUrl });
const jsm = await jetstreamManager(nc);
const js = jetstream(nc);
const enc = new TextEncoder();
const MiB = (b: number) => (b / 1024 / 1024).toFixed(1);

/** A valid event envelope (as RuntimeEventBus would publish it), built from a template. */
const event = (i: number) =>
  enc.encode(
    `{"id":"ev-${i}","event":"tool_exec_ended","ts":${1_790_000_000_000 + i},"source":"bench",` +
      `"correlation":{"session_id":"s-${i % 97}","turn_id":"t-${i % 1009}","step_id":"st-${i % 7}",` +
      `"run_id":"","session_generation":1,"verify_attempt":0,"tool_call_id":"tc-${i}",` +
      `"llm_call_id":"lc-${i % 13}","llm_attempt_id":"la-0"},` +
      `"payload":{"tool_name":"fs.read","duration_ms":12.5,"has_error":false,"bytes":${i * 7}}}`,
  );

interface Sample {
  at: number;
  done: number;
  rss: number;
  heapUsed: number;
  external: number;
}

let projection: Awaited<ReturnType<typeof openProjectionDb>> | undefined;
try {
  await ensureEventStreams(nc, n);
  progress(`publishing ${N.toLocaleString("en-US")} events (${WINDOW} in flight)`);
  const t0 = performance.now();
  const subject = n.event("tool_exec_ended");
  for (let start = 0; start < N; start += WINDOW) {
    const acks = [];
    for (let i = start; i < Math.min(N, start + WINDOW); i++) acks.push(js.publish(subject, event(i)));
    await Promise.all(acks);
    if (start % 100_000 === 0 && start > 0) progress(`published ${start.toLocaleString("en-US")}`);
  }
  const publishRate = N / ((performance.now() - t0) / 1000);

  projection = await openProjectionDb({ ns, databaseUrl });
  const offset = async () =>
    Number(
      (
        await projection!.db
          .selectFrom("projection_offsets")
          .select("last_seq")
          .where("consumer", "=", "replay")
          .where("stream", "=", n.eventsStream)
          .executeTakeFirst()
          .catch(() => undefined)
      )?.last_seq ?? 0,
    );
  progress("replay --rebuild (its own process), sampling its memory");
  const samples: Sample[] = [];
  let done = 0;
  const t1 = performance.now();
  const replay = spawnService("bench/replay-memory/replay.ts", {
    NATS_URL: natsUrl,
    DATABASE_URL: databaseUrl,
    GEODE_NAMESPACE: ns,
    LOG_LEVEL: "warn",
  });
  let seen = 0;
  const onOutput = () => {
    const lines = replay.output().split("\n");
    for (; seen < lines.length - 1; seen++) {
      const line = lines[seen]!;
      if (!line.startsWith("mem ")) continue;
      const m = JSON.parse(line.slice(4)) as Omit<Sample, "at" | "done">;
      samples.push({ at: performance.now() - t1, done, ...m });
    }
  };
  replay.child.stdout?.on("data", onOutput);
  const polling = (async () => {
    while (replay.child.exitCode === null) {
      done = await offset();
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const code = await replay.exited;
  await polling;
  onOutput();
  const replaySeconds = (performance.now() - t1) / 1000;
  if (code !== 0) throw new Error(`replay failed (${code}): ${replay.output().slice(-2000)}`);
  const rows = await projection.db
    .selectFrom("activity_events")
    .select((eb) => eb.fn.countAll().as("n"))
    .executeTakeFirstOrThrow();
  if (Number(rows.n) !== N) throw new Error(`replay produced ${rows.n} rows, expected ${N}`);

  // One sample per tenth of the stream: the first one at or past it.
  const table1: Array<Array<string>> = [];
  for (let tenth = 0; tenth <= 10; tenth++) {
    const s = samples.find((x) => x.done >= (tenth * N) / 10) ?? samples.at(-1)!;
    table1.push([
      `${tenth * 10}%`,
      s.done.toLocaleString("en-US"),
      `${(s.at / 1000).toFixed(1)} s`,
      MiB(s.rss),
      MiB(s.heapUsed),
      MiB(s.external),
    ]);
  }
  // The first tenth is warm-up (code compiled, pools and buffers filled): not part of "flat".
  const firstHalf = samples.filter((s) => s.done > N / 10 && s.done <= N / 2);
  const secondHalf = samples.filter((s) => s.done > N / 2);
  const peak = (xs: Sample[], k: "rss" | "heapUsed") => Math.max(...xs.map((s) => s[k]));
  const rssRatio = peak(secondHalf, "rss") / peak(firstHalf, "rss");
  const heapRatio = peak(secondHalf, "heapUsed") / peak(firstHalf, "heapUsed");
  process.stdout.write(
    `${table(["replayed", "rows", "time", "RSS MiB", "heap used MiB", "external MiB"], table1)}\n\n`,
  );
  process.stdout.write(
    [
      `events: ${N.toLocaleString("en-US")}; published at ${fmtRate(publishRate)} (raw JetStream, ${WINDOW} in flight); replayed at ${fmtRate(N / replaySeconds)} (${samples.length} samples)`,
      `peak RSS: 10-50% ${MiB(peak(firstHalf, "rss"))} MiB, second half ${MiB(peak(secondHalf, "rss"))} MiB; peak heap used: ${MiB(peak(firstHalf, "heapUsed"))} / ${MiB(peak(secondHalf, "heapUsed"))} MiB`,
      `target: memory flat over the replay (peak RSS of the second half ≤ 1.10 × that of 10-50%): ${rssRatio.toFixed(2)} × (heap ${heapRatio.toFixed(2)} ×): ${rssRatio <= 1.1 ? "met" : "not met"}`,
    ].join("\n") + "\n",
  );
} finally {
  await projection?.close();
  await cleanupNamespace(jsm, ns, databaseUrl);
  await nc.close();
}
