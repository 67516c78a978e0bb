/**
 * Audit benchmark (`pnpm bench audit`): in one run, on a unique namespace,
 *   1. end to end: E events published while the activity-recorder and the notary (each its own
 *      process, the notary at the default checkpoint interval) run: publish → committed rows
 *      against publish → leaves in the tree, and each checkpoint's lag (signed_at minus when the
 *      stream reached its size);
 *   2. the notary alone: the stream grown to N messages while it is stopped, then its backlog;
 *   3. verify: `geode audit verify --log events` over the N leaves (in this process: every leaf
 *      recomputed and compared with the notary's, every checkpoint's signature checked and its root
 *      compared at its size), against the floor, a bare ordered consumer reading the same stream;
 *      taken in turns;
 *   4. proofs: an inclusion proof at tree size N from the notary's Postgres tree (as `geode audit
 *      prove` would read it), its size as JSON, and the offline check (path + signed note).
 * BENCH_AUDIT_EVENTS (E, default 100,000), BENCH_AUDIT_LEAVES (N, default 1,000,000),
 * BENCH_AUDIT_CHECKPOINT_MS (default 5,000); a quick run: BENCH_AUDIT_EVENTS=20000 BENCH_AUDIT_LEAVES=200000.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  consistencyProof,
  fromBase64,
  inclusionProof,
  MerkleFrontier,
  messageLeafHash,
  noteVerifier,
  openCheckpoint,
  sameHash,
  toBase64,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
  writeAuditKeyFile,
} from "@geode/audit";
import { RuntimeEventBus } from "@geode/bus";
import { runCliCaptured } from "@geode/cli/testing";
import { names as buildNames, RECORDER_CONSUMER } from "@geode/contracts";
import { AuditTreeStore, openProjectionDb } from "@geode/projection";
import {
  cleanupNamespace,
  DEFAULT_DATABASE_URL,
  DEFAULT_NATS_URL,
  type SpawnedProcess,
  spawnService,
  uniqueNamespace,
} from "@geode/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { sql } from "kysely";
import { machineBusy } from "../lib/cpu-time.js";
import { fmtLoad, fmtRate, fmtUs, measureSequential, progress, table } from "../lib/stats.js";

const E = Number(process.env["BENCH_AUDIT_EVENTS"] ?? 100_000);
const N = Math.max(E, Number(process.env["BENCH_AUDIT_LEAVES"] ?? 1_000_000));
const CHECKPOINT_MS = Number(process.env["BENCH_AUDIT_CHECKPOINT_MS"] ?? 5_000);
const ROUNDS = 3;
const natsUrl = process.env["NATS_URL"] || DEFAULT_NATS_URL;
const databaseUrl = process.env["DATABASE_URL"] || DEFAULT_DATABASE_URL;
const ns = uniqueNamespace("bench");
const n = buildNames(ns);
const nc = await connect({ servers: natsUrl });
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);
const projection = await openProjectionDb({ ns, databaseUrl });
const keyDir = mkdtempSync(path.join(tmpdir(), "geode-bench-audit-"));
const keyFile = path.join(keyDir, "audit.key");
const { verifierKey } = writeAuditKeyFile(keyFile, "bench-notary");
const verifier = noteVerifier(verifierKey);
const origin = n.auditLog("events");
const stream = n.eventsStream;

/** A stored base64 hash as bytes (the notary wrote it: never malformed). */
const hashOf = (b64: string): Uint8Array => {
  const bytes = fromBase64(b64);
  if (!bytes) throw new Error(`not a base64 hash: ${b64}`);
  return bytes;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rows: Array<[string, string, string]> = [];
const targets: string[] = [];
const target = (what: string, measured: number, goal: string, met: boolean) =>
  targets.push(`target: ${what}: ${measured.toFixed(2)} (goal ${goal}): ${met ? "met" : "not met"}`);
const busyNote = (span: ReturnType<typeof machineBusy>) => {
  const b = span.end();
  return b ? `; cores busy ${b.busyCores.toFixed(2)} of ${b.cores}` : "";
};

const serviceEnv = {
  NATS_URL: natsUrl,
  DATABASE_URL: databaseUrl,
  GEODE_NAMESPACE: ns,
  GEODE_METRICS_PORT: "0",
  LOG_LEVEL: "info",
};
const notaryEnv = {
  ...serviceEnv,
  GEODE_AUDIT_KEY_FILE: keyFile,
  GEODE_AUDIT_CHECKPOINT_MS: String(CHECKPOINT_MS),
};

async function auditSize(): Promise<number | undefined> {
  const r = await sql<{ size: string }>`select size from ${sql.id(ns, "audit_logs")} where log = 'events'`
    .execute(projection.root)
    .catch(() => ({ rows: [] as Array<{ size: string }> }));
  return r.rows[0] ? Number(r.rows[0].size) : undefined;
}

async function checkpoints(): Promise<Array<{ size: number; root: string; note: string; signedAt: number }>> {
  const r = await sql<{ size: string; root: string; note: string; signed_at: string }>`
    select size, root, note, signed_at from ${sql.id(ns, "audit_checkpoints")}
    where log = 'events' order by size`
    .execute(projection.root)
    .catch(() => ({ rows: [] as Array<{ size: string; root: string; note: string; signed_at: string }> }));
  return r.rows.map((c) => ({
    size: Number(c.size),
    root: c.root,
    note: c.note,
    signedAt: Number(c.signed_at),
  }));
}

async function startNotary(): Promise<SpawnedProcess> {
  const child = spawnService("services/notary/src/main.ts", notaryEnv);
  await child.waitForOutput(/notary started/);
  while ((await auditSize()) === undefined) await sleep(20);
  return child;
}

/** Until the notary's events tree has `size` leaves and a checkpoint of that size is stored. */
async function untilTree(size: number): Promise<{ leavesAt: number; signedAt: number }> {
  while (((await auditSize()) ?? 0) < size) await sleep(10);
  const leavesAt = performance.now();
  for (;;) {
    const last = (await checkpoints()).at(-1);
    if (last && last.size >= size) return { leavesAt, signedAt: last.signedAt };
    await sleep(20);
  }
}

async function recorderRows(count: number): Promise<number> {
  const offset = async () =>
    Number(
      (
        await projection.db
          .selectFrom("projection_offsets")
          .select("last_seq")
          .where("consumer", "=", RECORDER_CONSUMER)
          .where("stream", "=", stream)
          .executeTakeFirst()
      )?.last_seq ?? 0,
    );
  while ((await offset()) < count) await sleep(10);
  const rowsIn = async () =>
    Number(
      (
        await projection.db
          .selectFrom("activity_events")
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );
  while ((await rowsIn()) < count) await sleep(10);
  return performance.now();
}

/** Reads the whole stream over an ordered consumer; `each` sees every message. */
async function readStream(
  each: (m: { seq: number; subject: string; msgId: string; data: Uint8Array }) => void,
) {
  const last = (await jsm.streams.info(stream)).state.last_seq;
  const consumer = await js.consumers.get(stream);
  const iter = await consumer.consume();
  for await (const m of iter) {
    each({ seq: m.seq, subject: m.subject, msgId: m.headers?.get("Nats-Msg-Id") ?? "", data: m.data });
    if (m.seq >= last) break;
  }
  await iter.close();
}

const payload = (i: number) => ({ tool_name: "fs.read", duration_ms: 12.5, has_error: false, bytes: i * 7 });
const correlation = (i: number) => ({
  session_id: `s-${i % 97}`,
  turn_id: `t-${i % 1009}`,
  step_id: `st-${i % 7}`,
  run_id: "",
  session_generation: 1,
  verify_attempt: 0,
  tool_call_id: `tc-${i}`,
  llm_call_id: `lc-${i % 13}`,
  llm_attempt_id: "la-0",
});

const children: SpawnedProcess[] = [];
try {
  // 1. End to end: the recorder and the notary as their own processes, events published meanwhile.
  progress("end to end: starting activity-recorder and notary");
  const recorder = spawnService("services/activity-recorder/src/main.ts", {
    ...serviceEnv,
    LOG_LEVEL: "warn",
  });
  children.push(recorder);
  let notary = await startNotary();
  children.push(notary);
  for (;;) {
    try {
      await jsm.consumers.info(stream, RECORDER_CONSUMER);
      break;
    } catch {
      await sleep(50);
    }
  }
  const bus = await RuntimeEventBus.create({ nc, names: n, source: "bench" });
  // When the stream reached each sequence (sampled every 25 ms), for the checkpoints' lag.
  const reached: Array<{ at: number; seq: number }> = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const info = await jsm.streams.info(stream).catch(() => undefined);
      if (info) reached.push({ at: Date.now(), seq: info.state.last_seq });
      await sleep(25);
    }
  })();
  progress(`end to end: publishing ${E.toLocaleString("en-US")} events`);
  const e2eBusy = machineBusy();
  const t1 = performance.now();
  const WINDOW = 2_000;
  for (let start = 0; start < E; start += WINDOW) {
    const batch = [];
    for (let i = start; i < Math.min(E, start + WINDOW); i++)
      batch.push(bus.emit("tool_exec_ended", payload(i), correlation(i)));
    const failed = (await Promise.all(batch)).filter((e) => e === null).length;
    if (failed > 0) throw new Error(`${failed} events not published`);
  }
  const published = performance.now();
  const [rowsAt, tree] = await Promise.all([recorderRows(E), untilTree(E)]);
  sampling = false;
  await sampler;
  const e2eNote = busyNote(e2eBusy);
  const recorderRate = E / ((rowsAt - t1) / 1000);
  const notaryRate = E / ((tree.leavesAt - t1) / 1000);
  rows.push([
    "publish (RuntimeEventBus.emit, 2,000 in flight)",
    fmtRate(E / ((published - t1) / 1000)),
    "JetStream acked",
  ]);
  rows.push([
    "end to end: publish → recorder's committed rows",
    fmtRate(recorderRate),
    `${E.toLocaleString("en-US")} events; the last row ${((rowsAt - published) / 1000).toFixed(2)} s after the last publish`,
  ]);
  rows.push([
    "end to end: publish → notary's leaves (Postgres)",
    fmtRate(notaryRate),
    `the last leaf ${((tree.leavesAt - published) / 1000).toFixed(2)} s after the last publish; ${(notaryRate / recorderRate).toFixed(2)} × the recorder${e2eNote}`,
  ]);
  target(
    "notary / recorder end-to-end rate",
    notaryRate / recorderRate,
    "≥ 1.00",
    notaryRate / recorderRate >= 1,
  );
  // Each checkpoint's lag: signed_at minus when the stream first showed its size (first_seq is 1).
  const lags = (await checkpoints())
    .map((c) => {
      const at = reached.find((r) => r.seq >= c.size)?.at;
      return at === undefined ? undefined : Math.max(0, c.signedAt - at);
    })
    .filter((l): l is number => l !== undefined)
    .sort((a, b) => a - b);
  const maxLag = lags.at(-1) ?? Number.NaN;
  rows.push([
    "checkpoint lag at that rate",
    `max ${(maxLag / 1000).toFixed(2)} s`,
    `median ${((lags[Math.floor(lags.length / 2)] ?? Number.NaN) / 1000).toFixed(2)} s over ${lags.length} checkpoints; interval ${CHECKPOINT_MS} ms (at least every 10,000 leaves); stream sampled every 25 ms`,
  ]);
  target("max checkpoint lag / interval", maxLag / CHECKPOINT_MS, "≤ 2.00", maxLag <= 2 * CHECKPOINT_MS);
  await recorder.stop("SIGTERM");
  await notary.stop("SIGTERM");

  // 2. The notary alone: the stream grown to N while it is stopped, then its backlog.
  if (N > E) {
    progress(`notary backlog: publishing ${(N - E).toLocaleString("en-US")} more messages`);
    const data = new TextEncoder().encode(JSON.stringify({ event: "tool_exec_ended", payload: payload(1) }));
    for (let start = E; start < N; start += WINDOW) {
      const acks = [];
      for (let i = start; i < Math.min(N, start + WINDOW); i++)
        acks.push(js.publish(n.event("tool_exec_ended"), data, { msgID: `bench-${i}` }));
      await Promise.all(acks);
    }
    progress("notary backlog: restarting the notary");
    const backlogBusy = machineBusy();
    const t2 = performance.now();
    notary = await startNotary();
    children.push(notary);
    const backlog = await untilTree(N);
    rows.push([
      "notary alone: backlog → leaves (Postgres)",
      fmtRate((N - E) / ((backlog.leavesAt - t2) / 1000)),
      `${(N - E).toLocaleString("en-US")} leaves from its stored frontier, process start included${busyNote(backlogBusy)}`,
    ]);
    await notary.stop("SIGTERM");
  }

  // 3. Verify: the tree recomputed over an ordered consumer against the bare consumer (the floor).
  const stored = await checkpoints();
  const last = stored.at(-1)!;
  if (last.size !== N) throw new Error(`the notary's latest checkpoint is of size ${last.size}, not ${N}`);
  const floors: number[] = [];
  const recomputes: number[] = [];
  /** Messages kept from the first read, to time the recomputation's own work without a consumer. */
  const KEEP = 100_000;
  const kept: Array<{ seq: number; subject: string; msgId: string; data: Uint8Array }> = [];
  for (let round = 0; round < ROUNDS; round++) {
    progress(
      `verify round ${round + 1}/${ROUNDS}: bare ordered consumer over ${N.toLocaleString("en-US")} messages`,
    );
    let count = 0;
    let t = performance.now();
    await readStream((m) => {
      count++;
      if (round === 0 && kept.length < KEEP) kept.push(m);
    });
    if (count !== N) throw new Error(`the floor read ${count} messages, not ${N}`);
    floors.push(N / ((performance.now() - t) / 1000));
    progress(`verify round ${round + 1}/${ROUNDS}: geode audit verify --log events`);
    t = performance.now();
    const r = await runCliCaptured(["audit", "verify", "--log", "events", "--key", verifierKey, "--json"], {
      ...process.env,
      ...serviceEnv,
    });
    const report =
      r.code === 0
        ? (JSON.parse(r.out) as { logs: Array<{ leaves: number; checkpoints: number }> })
        : undefined;
    if (!report || report.logs[0]?.leaves !== N || report.logs[0].checkpoints !== stored.length)
      throw new Error(`geode audit verify did not pass over the ${N} leaves: ${r.code} ${r.out} ${r.err}`);
    recomputes.push(N / ((performance.now() - t) / 1000));
  }
  const floor = Math.max(...floors);
  const recompute = Math.max(...recomputes);
  rows.push([
    "floor: bare ordered consumer",
    fmtRate(floor),
    `${N.toLocaleString("en-US")} messages; best of ${ROUNDS} (${floors.map((f) => fmtRate(f)).join(", ")})`,
  ]);
  rows.push([
    "verify: `geode audit verify --log events`",
    fmtRate(recompute),
    `in process; every leaf recomputed and compared with the stored one, ${stored.length} checkpoints' signatures and roots checked; ${(recompute / floor).toFixed(2)} × the floor; best of ${ROUNDS} (${recomputes.map((f) => fmtRate(f)).join(", ")})`,
  ]);
  // The recomputation's own CPU per message, in memory: with the consumer's cost per message
  // (1 / floor), the most it can reach of the floor on one thread.
  let hashUs = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 3; round++) {
    const frontier = new MerkleFrontier();
    const t = performance.now();
    for (const m of kept) frontier.appendHash(messageLeafHash(m));
    hashUs = Math.min(hashUs, ((performance.now() - t) * 1000) / kept.length);
  }
  const consumerUs = 1e6 / floor;
  rows.push([
    "",
    "",
    `its own work in memory: ${hashUs.toFixed(2)} µs per message (best of 3 over ${kept.length.toLocaleString("en-US")}); the consumer's ${consumerUs.toFixed(2)} µs: on one thread at most ${(consumerUs / (consumerUs + hashUs)).toFixed(2)} × the floor`,
  ]);
  target("geode audit verify / bare ordered consumer", recompute / floor, "≥ 0.80", recompute / floor >= 0.8);

  // 4. Proofs at tree size N from the notary's tree in Postgres, checked offline.
  const hashes = new AuditTreeStore(projection.root, ns, "events");
  const root = hashOf(last.root);
  if (!sameHash(await treeRoot(hashes, N), root))
    throw new Error("the stored tree's root is not the checkpoint's");
  const indexes = Array.from({ length: 200 }, (_, i) => Math.floor(((i + 0.5) / 200) * N));
  let k = 0;
  const prove = await measureSequential(
    indexes.length,
    () => inclusionProof(hashes, { index: indexes[k++ % indexes.length]!, size: N }),
    20,
  );
  const index = indexes[indexes.length >> 1]!;
  const pathHashes = await inclusionProof(hashes, { index, size: N });
  const [leaf] = await hashes.nodes([{ level: 0, index }]);
  const proofJson = JSON.stringify({
    log: "events",
    seq: index + 1,
    leaf_index: index,
    tree_size: N,
    leaf_hash: toBase64(leaf!),
    path: pathHashes.map(toBase64),
    checkpoint: last.note,
  });
  const check = await measureSequential(2_000, () => {
    const { checkpoint } = openCheckpoint(last.note, { verifiers: [verifier], origin });
    if (!verifyInclusion({ index, size: N, leafHash: leaf!, path: pathHashes, root: checkpoint.rootHash }))
      throw new Error("the inclusion proof does not check");
  });
  rows.push([
    "inclusion proof at size N",
    `${proofJson.length.toLocaleString("en-US")} B`,
    `${pathHashes.length} hashes (${pathHashes.length * 32} B) + the signed note, as JSON; from Postgres: median ${fmtUs(prove.medianUs)}, p99 ${fmtUs(prove.p99Us)}`,
  ]);
  rows.push([
    "offline check (signature + path)",
    fmtUs(check.medianUs),
    `median of 2,000; p99 ${fmtUs(check.p99Us)}`,
  ]);
  const first = stored[0]!;
  if (first.size < N) {
    const consistency = await consistencyProof(hashes, { size1: first.size, size2: N });
    const cCheck = await measureSequential(2_000, () => {
      if (
        !verifyConsistency({
          size1: first.size,
          size2: N,
          root1: hashOf(first.root),
          root2: root,
          path: consistency,
        })
      )
        throw new Error("the consistency proof does not check");
    });
    rows.push([
      `consistency proof ${first.size.toLocaleString("en-US")} → N`,
      `${consistency.length * 32} B`,
      `${consistency.length} hashes; check median ${fmtUs(cCheck.medianUs)}, p99 ${fmtUs(cCheck.p99Us)}`,
    ]);
  }
} finally {
  for (const c of children) await c.stop("SIGKILL").catch(() => undefined);
  await projection.close();
  await cleanupNamespace(jsm, ns, databaseUrl);
  await nc.close();
  rmSync(keyDir, { recursive: true, force: true });
}

process.stdout.write(`${table(["what", "rate / size", "notes"], rows)}\n\n`);
process.stdout.write(
  `${[
    ...targets,
    `events end to end: ${E.toLocaleString("en-US")}; leaves verified: ${N.toLocaleString("en-US")}; load average at the end: ${fmtLoad()}`,
  ].join("\n")}\n`,
);
