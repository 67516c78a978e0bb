import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { readAuditKeyFile, writeAuditKeyFile } from "@geode/audit";
import { runCliCaptured } from "@geode/cli/testing";
import { AuditStore, type Notary, startNotary } from "@geode/notary";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { createLogger } from "@geode/service";
import { type TestEnv, useTestEnv, waitFor } from "@geode/testing";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(path.join(tmpdir(), "geode-audit-verify-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One namespace with a notary signing with its own key, and `geode audit` run against it. */
function useAuditedPlane(name: string) {
  const env = useTestEnv();
  const keyFile = path.join(dir, `${name}.key`);
  let db: ProjectionDb;
  let store: AuditStore;
  let notary: Notary | undefined;
  let published = 0;
  const start = async () => {
    notary = await startNotary({
      nc: env().nc,
      names: env().names,
      log: createLogger("notary", "warn"),
      databaseUrl: env().databaseUrl,
      keyFile,
      checkpointMs: 200,
      leaseMs: 1_500,
      batchSize: 100,
    });
  };
  beforeAll(async () => {
    writeAuditKeyFile(keyFile, `verify-${name}`);
    db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl, migrate: false });
    store = new AuditStore(db.root, env().ns);
    await start();
  });
  afterAll(async () => {
    await notary?.stop();
    await db?.close();
  });
  const cliEnv = (e: TestEnv) => ({
    ...process.env,
    NATS_URL: e.natsUrl,
    DATABASE_URL: e.databaseUrl,
    GEODE_NAMESPACE: e.ns,
    GEODE_AUDIT_KEY_FILE: keyFile,
  });
  return {
    env,
    keyFile,
    verifierKey: () => readAuditKeyFile(keyFile).verifierKey,
    store: () => store,
    db: () => db,
    cli: (...argv: string[]) => runCliCaptured(["audit", ...argv], cliEnv(env())),
    async publish(count: number): Promise<number[]> {
      const seqs: number[] = [];
      for (let i = 0; i < count; i++) {
        published++;
        const ack = await env().js.publish(
          env().names.event("turn_completed"),
          JSON.stringify({ i: published, name }),
          { msgID: `${name}-${published}` },
        );
        seqs.push(ack.seq);
      }
      return seqs;
    },
    /** Until the notary has read `size` leaves and signed a checkpoint of them. */
    async checkpointed(size: number): Promise<string> {
      await waitFor(
        async () => (await store.latestCheckpoint("events").catch(() => undefined))?.size === size,
        60_000,
        100,
      );
      return (await store.latestCheckpoint("events"))!.note;
    },
    async stopNotary() {
      await notary?.stop();
      notary = undefined;
    },
    start,
  };
}

describe("geode audit verify on an untouched log", () => {
  const plane = useAuditedPlane("clean");

  it("verifies clean (exit 0, a summary), also as JSON, and with the key given", {
    timeout: 120_000,
  }, async () => {
    await plane.publish(30);
    await plane.checkpointed(30);
    const r = await plane.cli("verify", "--log", "events");
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toMatch(
      /: ok, 30 leaves \(30 re-read from .*_EVENTS\), \d+ checkpoints? verified \(latest of size 30\)/,
    );
    const j = await plane.cli("verify", "--json", "--key", plane.verifierKey());
    expect(j.code).toBe(0);
    const parsed = JSON.parse(j.out);
    expect(parsed.ok).toBe(true);
    expect(parsed.logs.map((l: { log: string; leaves: number }) => [l.log, l.leaves])).toEqual([
      ["events", 30],
      ["timeline", 0],
    ]);
  });

  it("a wrong key: bad signature of the first checkpoint (exit 1)", async () => {
    const other = path.join(dir, "other.key");
    const { verifierKey } = writeAuditKeyFile(other, "someone-else");
    const first = (await plane.store().checkpoints("events"))[0]!;
    const r = await plane.cli("verify", "--log", "events", "--key", verifierKey);
    expect(r.code).toBe(1);
    expect(r.out).toBe(`bad signature: checkpoint of size ${first.size}\n`);
  });

  it("a checkpoint whose signature was altered: bad signature (exit 1)", async () => {
    const note = (await plane.store().latestCheckpoint("events"))!.note;
    // The last base64 character of the signature line changed.
    const end = note.length - 2;
    const altered = note.slice(0, end) + (note[end] === "A" ? "B" : "A") + note.slice(end + 1);
    const file = path.join(dir, "altered.note");
    writeFileSync(file, altered);
    const r = await plane.cli("verify", "--log", "events", "--checkpoint", file);
    expect(r.code).toBe(1);
    expect(r.out).toBe("bad signature: checkpoint of size 30\n");
    // The same note in the notary's own table.
    await sql`update ${sql.id(plane.env().ns, "audit_checkpoints")} set note = ${altered}
      where log = 'events' and size = 30`.execute(plane.db().root);
    const stored = await plane.cli("verify", "--log", "events");
    expect(stored.code).toBe(1);
    expect(stored.out).toBe("bad signature: checkpoint of size 30\n");
  });
});

describe("a message deleted through the JetStream API after the notary read it", () => {
  const plane = useAuditedPlane("deleted");

  it("is named: deleted: seq N..N (exit 1)", { timeout: 120_000 }, async () => {
    const seqs = await plane.publish(20);
    await plane.checkpointed(20);
    await plane.env().jsm.streams.deleteMessage(plane.env().names.eventsStream, seqs[6]!);
    const r = await plane.cli("verify", "--log", "events");
    expect(r.code).toBe(1);
    expect(r.out).toBe(`deleted: seq ${seqs[6]}..${seqs[6]}\n`);
    const j = JSON.parse((await plane.cli("verify", "--log", "events", "--json")).out);
    expect(j).toMatchObject({
      ok: false,
      divergence: { log: "events", kind: "deleted", from_seq: seqs[6], to_seq: seqs[6] },
    });
  });
});

describe("a message deleted and an altered copy published again", () => {
  const plane = useAuditedPlane("replaced");

  it("names the original's sequence as deleted, though the copy was recorded after it", {
    timeout: 120_000,
  }, async () => {
    const seqs = await plane.publish(12);
    await plane.checkpointed(12);
    const { js, jsm, names } = plane.env();
    const target = seqs[3]!;
    const original = await jsm.streams.getMessage(names.eventsStream, { seq: target });
    await jsm.streams.deleteMessage(names.eventsStream, target);
    const altered = JSON.parse(new TextDecoder().decode(original!.data));
    altered.i = -1;
    await js.publish(original!.subject, JSON.stringify(altered), { msgID: "replaced-copy" });
    await plane.checkpointed(13);
    const r = await plane.cli("verify", "--log", "events");
    expect(r.code).toBe(1);
    expect(r.out).toBe(`deleted: seq ${target}..${target}\n`);
  });
});

describe("the stream purged past a checkpoint, and the audit tables started again", () => {
  const plane = useAuditedPlane("purged");

  it("verifies clean alone, and with the checkpoint kept elsewhere: truncated (exit 1)", {
    timeout: 120_000,
  }, async () => {
    await plane.publish(10);
    const witness = path.join(dir, "witness.note");
    writeFileSync(witness, await plane.checkpointed(10));
    await plane.stopNotary();
    const { jsm, names, ns } = plane.env();
    await jsm.streams.purge(names.eventsStream);
    for (const t of ["audit_tree", "audit_checkpoints", "audit_logs"])
      await sql`delete from ${sql.id(ns, t)} where log = 'events'`.execute(plane.db().root);
    await plane.start();
    await plane.publish(3);
    await plane.checkpointed(3);
    const alone = await plane.cli("verify", "--log", "events");
    expect(alone.code).toBe(0);
    const r = await plane.cli("verify", "--log", "events", "--checkpoint", witness);
    expect(r.code).toBe(1);
    expect(r.out).toBe("truncated: the log has 3 leaves, checkpoint says 10\n");
  });
});

describe("geode audit verify --projection", () => {
  const plane = useAuditedPlane("projection");
  const tableSeqs: Record<string, number> = {};

  beforeAll(async () => {
    const { RuntimeEventBus } = await import("@geode/bus");
    const bus = await RuntimeEventBus.create({
      nc: plane.env().nc,
      names: plane.env().names,
      source: "audit-test",
    });
    const corr = { session_id: "s-proj", run_id: "r-proj" };
    await bus.emit("turn_completed", { words: 3 }, corr);
    const ext = await bus.emit(
      "extension_invoked",
      { surface: "hook", name: "PreToolUse", extension: "guard", status: "ok", duration_ms: 4 },
      corr,
    );
    await bus.timeline("session.started", { agent: "test" }, corr);
    await bus.timeline("session.ended", { reason: "done" }, corr);
    await bus.flush();
    expect(ext).not.toBeNull();
    await waitFor(
      async () =>
        (
          await plane
            .store()
            .latestCheckpoint("events")
            .catch(() => undefined)
        )?.size === 2 &&
        (
          await plane
            .store()
            .latestCheckpoint("timeline")
            .catch(() => undefined)
        )?.size === 2,
      60_000,
      100,
    );
    const replayed = await runCliCaptured(["replay"], {
      ...process.env,
      NATS_URL: plane.env().natsUrl,
      DATABASE_URL: plane.env().databaseUrl,
      GEODE_NAMESPACE: plane.env().ns,
    });
    expect(replayed.code, replayed.err).toBe(0);
    for (const t of ["activity_events", "extension_invocations", "session_events"]) {
      const r = await sql<{ stream_seq: string }>`select stream_seq from ${sql.id(plane.env().ns, t)}
        order by stream_seq desc limit 1`.execute(plane.db().root);
      tableSeqs[t] = Number(r.rows[0]!.stream_seq);
    }
  }, 120_000);

  /** Puts a tampered row back as the recorder made it: deleted, and replayed from the stream. */
  async function restore(table: string, seq: number): Promise<void> {
    await sql`delete from ${sql.id(plane.env().ns, table)} where stream_seq = ${seq}`.execute(
      plane.db().root,
    );
    const r = await runCliCaptured(["replay"], {
      ...process.env,
      NATS_URL: plane.env().natsUrl,
      DATABASE_URL: plane.env().databaseUrl,
      GEODE_NAMESPACE: plane.env().ns,
    });
    expect(r.code).toBe(0);
    expect((await plane.cli("verify", "--projection")).code).toBe(0);
  }

  it("the untouched projection matches its streams (exit 0)", async () => {
    const r = await plane.cli("verify", "--projection");
    expect(r.code, r.out + r.err).toBe(0);
    expect(r.out).toMatch(/events: ok, 2 leaves .*projection rows match/);
    expect(r.out).toMatch(/timeline: ok, 2 leaves .*projection rows match/);
  });

  for (const table of ["activity_events", "extension_invocations", "session_events"]) {
    it(`a changed and a deleted ${table} row are named by table and stream_seq (exit 1)`, {
      timeout: 60_000,
    }, async () => {
      const seq = tableSeqs[table]!;
      const t = sql.id(plane.env().ns, table);
      const change =
        table === "extension_invocations"
          ? sql`update ${t} set status = 'blocked' where stream_seq = ${seq}`
          : sql`update ${t} set payload = '{"rewritten":true}'::jsonb where stream_seq = ${seq}`;
      await change.execute(plane.db().root);
      const changed = await plane.cli("verify", "--projection");
      expect(changed.code).toBe(1);
      expect(changed.out).toBe(`changed row: ${table} stream_seq ${seq}\n`);
      // Without --projection the streams alone still verify.
      expect((await plane.cli("verify")).code).toBe(0);
      await restore(table, seq);
      await sql`delete from ${t} where stream_seq = ${seq}`.execute(plane.db().root);
      const deleted = await plane.cli("verify", "--projection");
      expect(deleted.code).toBe(1);
      expect(deleted.out).toBe(`deleted row: ${table} stream_seq ${seq}\n`);
      await restore(table, seq);
    });
  }
});

describe("a stream rewritten with the same sequences", () => {
  const plane = useAuditedPlane("rewritten");

  /** Deletes the events stream and publishes its messages again in `order`, `alter` changing one. */
  async function rewrite(
    messages: Array<{ subject: string; data: Uint8Array; msgId: string }>,
    order: number[],
    alter?: number,
  ): Promise<void> {
    const { js, jsm, names } = plane.env();
    const config = (await jsm.streams.info(names.eventsStream)).config;
    await jsm.streams.delete(names.eventsStream);
    await jsm.streams.add(config);
    for (const i of order) {
      const m = messages[i]!;
      const data = i === alter ? new TextEncoder().encode('{"i":-1}') : m.data;
      await js.publish(m.subject, data, { msgID: m.msgId });
    }
  }

  it("an altered message in place is modified: seq N; two swapped are reordered: seq N", {
    timeout: 120_000,
  }, async () => {
    const seqs = await plane.publish(8);
    await plane.checkpointed(8);
    await plane.stopNotary();
    const { jsm, names } = plane.env();
    const messages = [];
    for (const seq of seqs) {
      const m = await jsm.streams.getMessage(names.eventsStream, { seq });
      messages.push({ subject: m!.subject, data: m!.data, msgId: m!.header.get("Nats-Msg-Id") });
    }
    const order = messages.map((_, i) => i);
    await rewrite(messages, order, 4);
    const modified = await plane.cli("verify", "--log", "events");
    expect(modified.code).toBe(1);
    expect(modified.out).toBe(`modified: seq ${seqs[4]}\n`);

    await rewrite(messages, [0, 1, 3, 2, 4, 5, 6, 7]);
    const reordered = await plane.cli("verify", "--log", "events");
    expect(reordered.code).toBe(1);
    expect(reordered.out).toBe(`reordered: seq ${seqs[2]}\n`);

    await rewrite(messages, order);
    expect((await plane.cli("verify", "--log", "events")).code).toBe(0);
  });
});
