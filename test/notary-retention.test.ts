import { createHash } from "node:crypto";
import {
  encodeAuditLeaf,
  generateNoteKey,
  inclusionProof,
  leafHash,
  noteSigner,
  noteVerifier,
  openCheckpoint,
  sameHash,
  verifyInclusion,
} from "@geode/audit";
import { AuditStore, type Notary, startNotary } from "@geode/notary";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { useTestEnv, waitFor } from "@geode/testing";
import { DiscardPolicy, StorageType } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";

describe("notary and a stream's retention", () => {
  const env = useTestEnv();
  let db: ProjectionDb | undefined;
  let notary: Notary | undefined;
  afterAll(async () => {
    await notary?.stop();
    await db?.close();
  });

  it("messages the stream aged out are no gaps, and stay provable from the stored tree", {
    timeout: 120_000,
  }, async () => {
    const { js, jsm, names } = env();
    // The events stream with a retention of two seconds (the notary never reconfigures a stream).
    await jsm.streams.add({
      name: names.eventsStream,
      subjects: [names.eventsAll],
      storage: StorageType.File,
      max_age: nanos(2_000),
      discard: DiscardPolicy.Old,
    });
    const { signerKey, verifierKey } = generateNoteKey("retention-test");
    notary = await startNotary({
      nc: env().nc,
      names,
      databaseUrl: env().databaseUrl,
      signer: noteSigner(signerKey),
      checkpointMs: 200,
      leaseMs: 1_500,
    });
    db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl, migrate: false });
    const store = new AuditStore(db.root, env().ns);
    const checkpointed = async (size: number) =>
      (await store.latestCheckpoint("events").catch(() => undefined))?.size === size;

    // What each leaf is, from what was published (subject, id, data, the sequence the ack gave).
    const early: Array<{ seq: number; hash: Uint8Array }> = [];
    for (let i = 0; i < 20; i++) {
      const data = JSON.stringify({ i });
      const ack = await js.publish(names.event("turn_completed"), data, { msgID: `ret-${i}` });
      const dataHash = createHash("sha256").update(data).digest("hex");
      const leaf = { seq: ack.seq, subject: names.event("turn_completed"), msgId: `ret-${i}`, dataHash };
      early.push({ seq: ack.seq, hash: leafHash(encodeAuditLeaf(leaf)) });
    }
    await waitFor(() => checkpointed(20), 60_000, 100);
    await waitFor(async () => (await jsm.streams.info(names.eventsStream)).state.messages === 0, 60_000, 200);

    for (let i = 20; i < 25; i++)
      await js.publish(names.event("turn_completed"), JSON.stringify({ i }), { msgID: `ret-${i}` });
    await waitFor(() => checkpointed(25), 60_000, 100);
    const log = await store.readLog("events");
    expect(log).toMatchObject({ size: 25, gaps: 0, lastSeq: 25 });

    // Leaf 3 is gone from the stream and still proven against the latest signed checkpoint.
    const cp = await store.latestCheckpoint("events");
    const { checkpoint } = openCheckpoint(cp!.note, { verifiers: [noteVerifier(verifierKey)] });
    const target = early[3]!;
    const index = target.seq - log!.firstSeq;
    const [stored] = await store.hashStore("events").nodes([{ level: 0, index }]);
    expect(sameHash(stored!, target.hash)).toBe(true);
    const path = await inclusionProof(store.hashStore("events"), { index, size: checkpoint.size });
    expect(
      verifyInclusion({
        index,
        size: checkpoint.size,
        leafHash: target.hash,
        path,
        root: checkpoint.rootHash,
      }),
    ).toBe(true);
  });
});
