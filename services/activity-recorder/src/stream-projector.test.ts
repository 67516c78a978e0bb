import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensureBucket, RuntimeEventBus } from "@geode/bus";
import type { RunRecord } from "@geode/contracts";
import { openProjectionDb, type ProjectionDb, readOffsets } from "@geode/projection";
import { useTestEnv, waitFor } from "@geode/testing";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ActivityRecorder, startActivityRecorder } from "./index.js";

const TOTAL = 300;

describe("activity-recorder with several batches in flight", () => {
  const env = useTestEnv();
  let db: ProjectionDb;
  let runsDir: string;

  beforeAll(async () => {
    db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl });
    runsDir = mkdtempSync(path.join(tmpdir(), "geode-runs-"));
  });
  afterAll(async () => {
    await db?.close();
    rmSync(runsDir, { recursive: true, force: true });
  });

  async function openRun(runId: string): Promise<void> {
    const kv = await ensureBucket(env().nc, env().names, "runs");
    const record: RunRecord = { run_id: runId, status: "active", opened_at: 0, closed_at: null };
    await kv.put(runId, JSON.stringify(record));
  }

  async function publish(session: string, runId: string): Promise<string[]> {
    const bus = await RuntimeEventBus.create({ nc: env().nc, names: env().names, source: "writers-test" });
    const ids = Array.from({ length: TOTAL }, () => randomUUID());
    const sent = await Promise.all(
      ids.map((id, i) => bus.emit("turn_completed", { i }, { session_id: session, run_id: runId }, { id })),
    );
    expect(sent.every((e) => e !== null)).toBe(true);
    return ids;
  }

  /** Every message of the events stream is committed, mirrored and acked. */
  async function settled(recorder: ActivityRecorder): Promise<number> {
    const last = (await env().jsm.streams.info(env().names.eventsStream)).state.last_seq;
    await waitFor(() => recorder.stats().events.lastSeq >= last, 20_000);
    await waitFor(async () => {
      const c = await env().jsm.consumers.info(env().names.eventsStream, "activity-recorder");
      return c.num_ack_pending === 0 && c.num_pending === 0;
    }, 20_000);
    return last;
  }

  const storedIds = async (session: string) =>
    (
      await db.db
        .selectFrom("activity_events")
        .select("event_id")
        .where("session_id", "=", session)
        .orderBy("stream_seq")
        .execute()
    ).map((r) => r.event_id);

  const runLines = (runId: string) =>
    readFileSync(path.join(runsDir, runId, "events.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { event_id: string; stream_seq: number });

  it("stores every event once and mirrors the run file in stream order", { timeout: 40_000 }, async () => {
    await openRun("run-order");
    const ids = await publish("s-order", "run-order");
    const recorder = await startActivityRecorder({
      nc: env().nc,
      names: env().names,
      db,
      runsDir,
      batchSize: 7,
      writers: 3,
    });
    try {
      const last = await settled(recorder);
      const stored = await storedIds("s-order");
      expect(stored).toHaveLength(TOTAL);
      expect(new Set(stored)).toEqual(new Set(ids));
      const lines = runLines("run-order");
      // Batches commit in any order, but the file follows the stream: one line per event, in order.
      expect(lines.map((l) => l.event_id)).toEqual(stored);
      expect(lines.map((l) => l.stream_seq)).toEqual(
        [...lines.map((l) => l.stream_seq)].sort((a, b) => a - b),
      );
      expect(recorder.stats().events.batches).toBeGreaterThanOrEqual(Math.ceil(TOTAL / 7));
      expect((await readOffsets(db.db)).find((o) => o.stream === env().names.eventsStream)?.last_seq).toBe(
        last,
      );
    } finally {
      await recorder.stop();
    }
  });

  it("a batch that waits longer than the ack wait is kept alive in progress, not redelivered", {
    timeout: 40_000,
  }, async () => {
    const recorder = await startActivityRecorder({
      nc: env().nc,
      names: env().names,
      db,
      runsDir: null,
      batchSize: 50,
      // Two seconds, not one: the in-progress marks go out every third of it, and on a loaded
      // 2-core machine an event-loop stall of a second once let the batch be redelivered.
      ackWaitMs: 2_000,
    });
    try {
      // Another transaction holds the table for four ack waits: the batch's insert waits on it.
      const info = await db.db.transaction().execute(async (trx) => {
        await sql`lock table ${sql.id(env().ns, "activity_events")} in access exclusive mode`.execute(trx);
        await publish("s-slow", "run-slow");
        await new Promise((r) => setTimeout(r, 8_000));
        return env().jsm.consumers.info(env().names.eventsStream, "activity-recorder");
      });
      // Held, and never handed out again meanwhile.
      expect(info.num_ack_pending).toBe(TOTAL);
      expect(info.num_redelivered).toBe(0);
      await settled(recorder);
      expect(await storedIds("s-slow")).toHaveLength(TOTAL);
      expect(info.config.ack_wait).toBe(2_000_000_000);
    } finally {
      await recorder.stop();
    }
  });

  it("a batch that fails while others commit is retried: nothing lost, nothing twice", {
    timeout: 40_000,
  }, async () => {
    // A real Postgres failure for the first insert that carries the poisoned event (a sequence is
    // not rolled back, so the redelivered batch succeeds).
    const ns = sql.id(env().ns);
    await sql`create sequence ${ns}.poison_hits`.execute(db.root);
    await sql`create function ${ns}.poison() returns trigger language plpgsql as $$
      begin
        if new.source = 'writers-test' and new.payload->>'i' = '150'
           and nextval(${sql.lit(`"${env().ns}".poison_hits`)}) = 1 then
          raise exception 'planted failure';
        end if;
        return new;
      end $$`.execute(db.root);
    await sql`create trigger poison before insert on ${ns}.activity_events
      for each row execute function ${ns}.poison()`.execute(db.root);

    await openRun("run-fail");
    const ids = await publish("s-fail", "run-fail");
    const recorder = await startActivityRecorder({
      nc: env().nc,
      names: env().names,
      db,
      runsDir,
      batchSize: 10,
      writers: 3,
    });
    try {
      await settled(recorder);
      expect(recorder.stats().events.failedBatches).toBe(1);
      const stored = await storedIds("s-fail");
      expect(stored).toHaveLength(TOTAL);
      expect(new Set(stored)).toEqual(new Set(ids));
      const mirrored = runLines("run-fail").map((l) => l.event_id);
      expect(mirrored).toHaveLength(TOTAL);
      expect(new Set(mirrored)).toEqual(new Set(ids));
    } finally {
      await recorder.stop();
    }
  });
});
