import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  consistencyProof,
  encodeAuditLeaf,
  gapLeaf,
  inclusionProof,
  leafHash,
  noteVerifier,
  openCheckpoint,
  readAuditKeyFile,
  sameHash,
  toBase64,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
  writeAuditKeyFile,
} from "@geode/audit";
import {
  type AuditCheckpointMessage,
  AuditCheckpointSchema,
  AuditGapSchema,
  type AuditLogName,
  HealthReplySchema,
} from "@geode/contracts";
import { freePort } from "@geode/local-server";
import { AuditStore, type Notary, startNotary } from "@geode/notary";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { createLogger } from "@geode/service";
import { type SpawnedProcess, spawnService, useTestEnv, waitFor } from "@geode/testing";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recomputeTree } from "./notary-support.js";

const env = useTestEnv();
const dir = mkdtempSync(path.join(tmpdir(), "geode-notary-"));
const keyA = path.join(dir, "a.key");
const keyB = path.join(dir, "b.key");
let db: ProjectionDb;
let store: AuditStore;
const running: Notary[] = [];
const children: SpawnedProcess[] = [];
let published = 0;

beforeAll(async () => {
  writeAuditKeyFile(keyA, "notary-a");
  writeAuditKeyFile(keyB, "notary-b");
  db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl, migrate: false });
  store = new AuditStore(db.root, env().ns);
});
afterAll(async () => {
  for (const c of children) await c.stop("SIGKILL");
  for (const n of running) await n.stop().catch(() => undefined);
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function notary(keyFile: string, instance: string): Promise<Notary> {
  const n = await startNotary({
    nc: env().nc,
    names: env().names,
    log: createLogger("notary", "warn"),
    databaseUrl: env().databaseUrl,
    keyFile,
    checkpointMs: 200,
    leaseMs: 1_500,
    batchSize: 100,
    instance,
  });
  running.push(n);
  return n;
}

async function stopNotary(n: Notary): Promise<void> {
  await n.stop();
  running.splice(running.indexOf(n), 1);
}

/** `count` event messages published straight to JetStream, each with its own `Nats-Msg-Id`. */
async function publishEvents(count: number): Promise<void> {
  const { js, names } = env();
  for (let i = 0; i < count; i += 200) {
    const chunk = Array.from({ length: Math.min(200, count - i) }, () => {
      published++;
      return js.publish(names.event("turn_completed"), JSON.stringify({ i: published }), {
        msgID: `evt-${published}`,
      });
    });
    await Promise.all(chunk);
  }
}

const recomputedRoot = (log: AuditLogName) => recomputeTree(env(), log);

async function waitForSize(log: AuditLogName, size: number, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    async () => {
      const stored = await store.readLog(log).catch(() => undefined);
      const cp = await store.latestCheckpoint(log).catch(() => undefined);
      return stored?.size === size && cp?.size === size;
    },
    timeoutMs,
    100,
  );
}

/** Every checkpoint message of a log in `{NS}_CHECKPOINTS`, in stream order. */
async function checkpointMessages(log: AuditLogName): Promise<AuditCheckpointMessage[]> {
  const { js, jsm, names } = env();
  const info = await jsm.streams.info(names.checkpointsStream, {
    subjects_filter: names.auditCheckpoint(log),
  });
  const total = info.state.subjects?.[names.auditCheckpoint(log)] ?? 0;
  if (total === 0) return [];
  const consumer = await js.consumers.get(names.checkpointsStream, {
    filter_subjects: names.auditCheckpoint(log),
  });
  const out: AuditCheckpointMessage[] = [];
  const iter = await consumer.consume();
  for await (const m of iter) {
    out.push(AuditCheckpointSchema.parse(m.json()));
    if (out.length >= total) break;
  }
  await iter.close();
  return out;
}

/** Each checkpoint's signature by one of `keys`, and each consistent with the one before. */
async function expectConsistent(log: AuditLogName, keys: string[]): Promise<Set<string>> {
  const verifiers = keys.map(noteVerifier);
  const signers = new Set<string>();
  const messages = await checkpointMessages(log);
  expect(messages.length).toBeGreaterThan(0);
  let before: { size: number; root: Uint8Array } | undefined;
  for (const m of messages) {
    const { checkpoint, note } = openCheckpoint(m.note, { verifiers, origin: env().names.auditLog(log) });
    for (const s of note.signatures) signers.add(s.name);
    expect(checkpoint.size).toBe(m.size);
    expect(toBase64(checkpoint.rootHash)).toBe(m.root_hash);
    if (before) {
      expect(checkpoint.size).toBeGreaterThan(before.size);
      const proof = await consistencyProof(store.hashStore(log), {
        size1: before.size,
        size2: checkpoint.size,
      });
      expect(
        verifyConsistency({
          size1: before.size,
          size2: checkpoint.size,
          root1: before.root,
          root2: checkpoint.rootHash,
          path: proof,
        }),
      ).toBe(true);
    }
    before = { size: checkpoint.size, root: checkpoint.rootHash };
  }
  return signers;
}

describe("notary", () => {
  it("does not start without a usable key, and says which file and how to get one", async () => {
    const missing = path.join(dir, "missing.key");
    const err = await notary(missing, "nokey").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe(
      `the audit key file ${missing} (GEODE_AUDIT_KEY_FILE) cannot be used: does not exist`,
    );
    expect((err as { hint?: string }).hint).toMatch(/geode up/);
  });

  it("keeps a tree whose root is the one recomputed from the stream, signed and provable", {
    timeout: 120_000,
  }, async () => {
    const n = await notary(keyA, "first");
    await publishEvents(750);
    await waitForSize("events", 750);
    const recomputed = await recomputedRoot("events");
    expect(recomputed.size).toBe(750);
    const cp = await store.latestCheckpoint("events");
    expect(cp?.root).toBe(toBase64(recomputed.root));
    expect(sameHash(await treeRoot(store.hashStore("events"), 750), recomputed.root)).toBe(true);

    // The signature verifies with the verifier key alone; a wrong key does not.
    const verifierKey = readAuditKeyFile(keyA).verifierKey;
    const { checkpoint } = openCheckpoint(cp!.note, { verifiers: [noteVerifier(verifierKey)] });
    expect(checkpoint).toMatchObject({ origin: env().names.auditLog("events"), size: 750 });
    expect(() =>
      openCheckpoint(cp!.note, { verifiers: [noteVerifier(readAuditKeyFile(keyB).verifierKey)] }),
    ).toThrow();

    // Any leaf is provable against the signed root from the stored tree.
    const index = 321;
    const path = await inclusionProof(store.hashStore("events"), { index, size: 750 });
    const leaf = await store.hashStore("events").nodes([{ level: 0, index }]);
    expect(verifyInclusion({ index, size: 750, leafHash: leaf[0]!, path, root: checkpoint.rootHash })).toBe(
      true,
    );

    const signers = await expectConsistent("events", [verifierKey]);
    expect([...signers]).toEqual(["notary-a"]);
    const audit = n.health().audit;
    expect(audit?.active).toBe(true);
    expect(audit?.logs.find((l) => l.log === "events")).toMatchObject({ size: 750, last_seq: 750, gaps: 0 });
    await stopNotary(n);
  });

  it("a message deleted before the notary read it is a `deleted` leaf and an audit.gap", {
    timeout: 120_000,
  }, async () => {
    const { js, jsm, names, nc } = env();
    const before = (await store.readLog("timeline"))?.size ?? 0;
    const seqs: number[] = [];
    for (let i = 0; i < 4; i++) {
      const ack = await js.publish(names.timeline("tool.called"), JSON.stringify({ i }), {
        msgID: `tl-${i}`,
      });
      seqs.push(ack.seq);
    }
    expect(await jsm.streams.deleteMessage(names.timelineStream, seqs[1]!)).toBe(true);
    expect(await jsm.streams.deleteMessage(names.timelineStream, seqs[2]!)).toBe(true);
    const gaps = nc.subscribe(names.auditGap("timeline"), { max: 1 });
    await nc.flush();
    const n = await notary(keyA, "gaps");
    const size = before + 4;
    await waitForSize("timeline", size);
    let gap: unknown;
    for await (const m of gaps) gap = AuditGapSchema.parse(m.json());
    expect(gap).toEqual({ log: "timeline", from_seq: seqs[1], to_seq: seqs[2] });
    const stored = (await store.readLog("timeline"))!;
    expect(stored.gaps).toBe(2);
    const index = seqs[1]! - stored.firstSeq;
    const [leaf] = await store.hashStore("timeline").nodes([{ level: 0, index }]);
    expect(sameHash(leaf!, leafHash(encodeAuditLeaf(gapLeaf(seqs[1]!))))).toBe(true);
    const recomputed = await recomputedRoot("timeline");
    expect(recomputed.size).toBe(size);
    expect((await store.latestCheckpoint("timeline"))?.root).toBe(toBase64(recomputed.root));
    expect(n.health().audit?.logs.find((l) => l.log === "timeline")?.gaps).toBe(2);
    await stopNotary(n);
  });

  it("SIGKILLed under load and restarted: resumes from its frontier, no leaf twice or missing", {
    timeout: 240_000,
  }, async () => {
    const childEnv = {
      ...env().env,
      GEODE_AUDIT_KEY_FILE: keyA,
      GEODE_AUDIT_CHECKPOINT_MS: "200",
      GEODE_AUDIT_LEASE_MS: "1500",
      GEODE_AUDIT_BATCH_SIZE: "50",
      LOG_LEVEL: "info",
    };
    const start = (await store.readLog("events"))!.size;
    const first = spawnService("services/notary/src/main.ts", childEnv);
    children.push(first);
    await first.waitForOutput(/notary started/);
    const load = publishEvents(3_000);
    await waitFor(async () => ((await store.readLog("events"))?.size ?? 0) > start + 500, 60_000, 20);
    await first.stop("SIGKILL");
    const killedAt = (await store.readLog("events"))!.size;
    await load;
    const total = start + 3_000;
    expect(killedAt).toBeLessThan(total);
    const second = spawnService("services/notary/src/main.ts", {
      ...childEnv,
      GEODE_METRICS_PORT: String(await freePort()),
    });
    children.push(second);
    await second.waitForOutput(/notary started/);
    await waitForSize("events", total, 120_000);
    const recomputed = await recomputedRoot("events");
    expect(recomputed.size).toBe(total);
    expect((await store.latestCheckpoint("events"))?.root).toBe(toBase64(recomputed.root));
    const leaves = await sql<{ n: string }>`
      select count(*) as n from ${sql.id(env().ns, "audit_tree")} where log = 'events' and level = 0`.execute(
      db.root,
    );
    expect(Number(leaves.rows[0]!.n)).toBe(total);
    await expectConsistent("events", [readAuditKeyFile(keyA).verifierKey]);
    const health = HealthReplySchema.parse(
      (await env().nc.request(env().names.health("notary"), "", { timeout: 5_000 })).json(),
    );
    expect(health.audit?.logs.find((l) => l.log === "events")).toMatchObject({ size: total });
    // Its metrics: the leaves it appended itself, no gap, the age of its latest checkpoint.
    const metrics = await (await fetch(health.metrics_url!)).text();
    // (at most what was left after the kill: a commit sent just before it may have landed after the read)
    const appended = Number(/^geode_audit_leaves_total\{log="events"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(appended).toBeGreaterThan(0);
    expect(appended).toBeLessThanOrEqual(total - killedAt);
    expect(metrics).toContain('geode_audit_gaps_total{log="events"} 0\n');
    expect(metrics).toMatch(/^geode_audit_checkpoint_age_seconds\{log="events"\} \d/m);
    expect(await second.stop("SIGTERM")).toBe(0);
  });

  it("two notaries at once: only one signs; the other takes over without a fork", {
    timeout: 240_000,
  }, async () => {
    const [a, b] = await Promise.all([notary(keyA, "twin-a"), notary(keyB, "twin-b")]);
    await waitFor(() => a.active || b.active, 30_000, 50);
    expect(a.active && b.active).toBe(false);
    const active = a.active ? a : b;
    const standby = a.active ? b : a;
    const activeName = a.active ? "notary-a" : "notary-b";
    const cpsBefore = new Set((await checkpointMessages("events")).map((m) => m.size));
    await publishEvents(600);
    const mid = published;
    await waitForSize("events", mid);
    const signedNow = (await checkpointMessages("events")).filter((m) => !cpsBefore.has(m.size));
    expect(signedNow.length).toBeGreaterThan(0);
    const keys = [readAuditKeyFile(keyA).verifierKey, readAuditKeyFile(keyB).verifierKey];
    for (const m of signedNow) {
      const { note } = openCheckpoint(m.note, { verifiers: keys.map(noteVerifier) });
      expect(note.signatures.map((s) => s.name)).toEqual([activeName]);
    }
    expect(standby.active).toBe(false);
    // A standby's health says what the active one wrote (either may answer a health request).
    await waitFor(
      () => standby.health().audit?.logs.find((l) => l.log === "events")?.size === mid,
      30_000,
      50,
    );
    expect(standby.health().audit?.active).toBe(false);

    // The active one goes; the standby takes the lease and goes on from the stored frontier.
    await stopNotary(active);
    await waitFor(() => standby.active, 30_000, 50);
    await publishEvents(400);
    await waitForSize("events", published);
    const signers = await expectConsistent("events", keys);
    expect(signers.size).toBe(2);
    const recomputed = await recomputedRoot("events");
    expect((await store.latestCheckpoint("events"))?.root).toBe(toBase64(recomputed.root));
    await stopNotary(standby);
  });

  it("`geode replay --rebuild` rebuilds the projection and keeps the audit tables", {
    timeout: 180_000,
  }, async () => {
    const before = await store.readLog("events");
    const checkpoints = (await store.checkpoints("events")).length;
    expect(before?.size).toBeGreaterThan(0);
    const replay = spawnService("packages/cli/src/main.ts", env().env, ["replay", "--rebuild"]);
    expect(await replay.exited).toBe(0);
    expect(replay.output()).toMatch(/replay done: .* \(rebuilt\)/);
    // The projection is there again (made anew by the rebuild).
    await sql`select count(*) from ${sql.id(env().ns, "activity_events")}`.execute(db.root);
    const after = await store.readLog("events");
    expect(after?.size).toBe(before?.size);
    expect(toBase64(after!.frontier.root())).toBe(toBase64(before!.frontier.root()));
    expect((await store.checkpoints("events")).length).toBe(checkpoints);
    expect(sameHash(await treeRoot(store.hashStore("events"), after!.size), after!.frontier.root())).toBe(
      true,
    );
  });
});
