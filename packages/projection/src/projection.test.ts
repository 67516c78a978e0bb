import { uniqueNamespace } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { writeBatch } from "./batch-writer.js";
import { openProjectionDb, type ProjectionDb } from "./projection-db.js";
import { decodeStreamMessage } from "./projection-rows.js";
import { countRows, normalizeRow, pruneExpired, readOffsets } from "./queries.js";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const DAY = 86_400_000;

function eventMsg(id: string, event: string, ts: number, payload: Record<string, unknown> = {}) {
  return enc({
    id,
    event,
    ts,
    source: "test",
    correlation: {
      session_id: "s1",
      turn_id: "t1",
      step_id: "st",
      run_id: "r1",
      session_generation: 2,
      verify_attempt: 1,
      tool_call_id: "tc",
      llm_call_id: "lc",
      llm_attempt_id: "la",
    },
    payload,
  });
}

function rowsOf(seqs: Array<[number, Uint8Array]>) {
  const activity = [];
  for (const [seq, data] of seqs) {
    const d = decodeStreamMessage("events", seq, data);
    if (d.type === "event") activity.push(d.activity);
  }
  return activity;
}

for (const kind of ["postgres", "pglite"] as const) {
  describe(`projection on ${kind}`, () => {
    const ns = uniqueNamespace("p");
    let p: ProjectionDb;
    beforeAll(async () => {
      p = await openProjectionDb({
        ns,
        databaseUrl: kind === "postgres" ? inject("databaseUrl") : undefined,
        pgliteDir: "memory://",
      });
    });
    afterAll(async () => {
      await p.root.schema.dropSchema(ns).ifExists().cascade().execute();
      await p.close();
    });

    it("stores each row once across interleaved and redelivered batches; offset is a high-water mark", async () => {
      const now = Date.now();
      const msgs: Array<[number, Uint8Array]> = Array.from({ length: 20 }, (_, i) => [
        i + 1,
        eventMsg(`e${i + 1}`, "turn_completed", now, { n: i }),
      ]);
      // Replica B commits 11-20 before replica A commits 1-10; then 5-15 is redelivered.
      await writeBatch(p.db, { consumer: "c", stream: "S", lastSeq: 20, activity: rowsOf(msgs.slice(10)) });
      await writeBatch(p.db, {
        consumer: "c",
        stream: "S",
        lastSeq: 10,
        activity: rowsOf(msgs.slice(0, 10)),
      });
      const again = await writeBatch(p.db, {
        consumer: "c",
        stream: "S",
        lastSeq: 15,
        activity: rowsOf(msgs.slice(4, 15)),
      });
      expect(again.activity).toBe(0);
      expect((await countRows(p.db)).activity_events).toBe(20);
      expect(await readOffsets(p.db)).toEqual([{ consumer: "c", stream: "S", last_seq: 20 }]);
      const row = normalizeRow(
        await p.db
          .selectFrom("activity_events")
          .selectAll()
          .where("event_id", "=", "e3")
          .executeTakeFirstOrThrow(),
      );
      expect(row).toMatchObject({
        stream_seq: 3,
        event: "turn_completed",
        ts: now,
        session_id: "s1",
        session_generation: 2,
        llm_attempt_id: "la",
        retention_bucket: "ops",
        payload: { n: 2 },
      });
    });

    it("prune deletes only rows past their retention bucket", async () => {
      const now = Date.now();
      const msgs: Array<[number, Uint8Array]> = [
        [101, eventMsg("old-debug", "cognitive_plan", now - 8 * DAY)], // debug, 7 d: expired
        [102, eventMsg("new-debug", "cognitive_plan", now - 6 * DAY)],
        [103, eventMsg("old-ops", "turn_completed", now - 31 * DAY)], // ops, 30 d: expired
        [104, eventMsg("audit-40d", "config_reloaded", now - 40 * DAY)], // audit, 180 d: kept
        [105, eventMsg("old-audit", "config_reloaded", now - 181 * DAY)], // expired
      ];
      const before = (await countRows(p.db)).activity_events;
      await writeBatch(p.db, { consumer: "c", stream: "S", lastSeq: 105, activity: rowsOf(msgs) });
      const counts = await pruneExpired(p.db, now);
      expect(counts.activity_events).toBe(3);
      const left = await p.db
        .selectFrom("activity_events")
        .select("event_id")
        .where("stream_seq", ">", 100)
        .orderBy("stream_seq")
        .execute();
      expect(left.map((r) => r.event_id)).toEqual(["new-debug", "audit-40d"]);
      expect((await countRows(p.db)).activity_events).toBe(before + 2);
    });

    it("keeps U+0000 out of stored text and rejects bad messages without storing them", async () => {
      const d = decodeStreamMessage(
        "events",
        200,
        eventMsg("nul\u0000id", "memory_saved", Date.now(), { note: "a\u0000b" }),
      );
      expect(d.type).toBe("event");
      if (d.type !== "event") return;
      await writeBatch(p.db, { consumer: "c", stream: "S", lastSeq: 200, activity: [d.activity] });
      const row = await p.db
        .selectFrom("activity_events")
        .selectAll()
        .where("stream_seq", "=", 200)
        .executeTakeFirstOrThrow();
      expect(row.event_id).toBe("nulid");
      expect(row.payload).toEqual({ note: "ab" });
      expect(decodeStreamMessage("events", 201, new Uint8Array([0xff, 0x00])).type).toBe("rejected");
      expect(decodeStreamMessage("events", 202, enc({ id: "x", event: "nope" })).type).toBe("rejected");
      expect(decodeStreamMessage("timeline", 203, enc({ kind: "session.started" })).type).toBe("rejected");
    });
  });
}
