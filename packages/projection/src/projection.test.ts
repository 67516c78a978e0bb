import { PGlite } from "@electric-sql/pglite";
import { EventEnvelopeSchema, sha256 } from "@geode/contracts";
import { uniqueNamespace } from "@geode/testing";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { agentActivity } from "./agent-activity.js";
import { writeBatch } from "./batch-writer.js";
import { dropSecondaryIndexes, SECONDARY_INDEXES } from "./migrations.js";
import { type PgliteServer, servePglite } from "./pglite-server.js";
import { openProjectionDb, type ProjectionDb } from "./projection-db.js";
import { decodeStreamMessage, storedPayloadJson } from "./projection-rows.js";
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

// "pglite by URL": PGlite served on loopback and reached through a URL, as `geode up` hands the
// embedded database to its services in DATABASE_URL: it must be told apart from PostgreSQL.
for (const kind of ["postgres", "pglite", "pglite by URL"] as const) {
  describe(`projection on ${kind}`, () => {
    const ns = uniqueNamespace("p");
    let p: ProjectionDb;
    let lite: PGlite | undefined;
    let served: PgliteServer | undefined;
    beforeAll(async () => {
      if (kind === "pglite by URL") {
        lite = await PGlite.create();
        served = await servePglite(lite);
      }
      p = await openProjectionDb({
        ns,
        databaseUrl: kind === "postgres" ? inject("databaseUrl") : served?.url,
        pgliteDir: "memory://",
      });
    }, 180_000);
    afterAll(async () => {
      await p.root.schema.dropSchema(ns).ifExists().cascade().execute();
      await p.close();
      await served?.close();
      await lite?.close();
    });

    it("knows which server it talks to (COPY and index DDL for bulk loads are for PostgreSQL only)", async () => {
      expect(await p.server()).toBe(kind === "postgres" ? "postgres" : "pglite");
    });

    it.runIf(kind === "postgres")(
      "a migration of a complete projection takes no table lock: a writer's open transaction does not hold it up",
      async () => {
        const writer = new pg.Client({ connectionString: inject("databaseUrl") });
        await writer.connect();
        try {
          await writer.query("begin");
          await writer.query(`lock table "${ns}".activity_events in row exclusive mode`);
          const migrated = p.migrate().then(() => "migrated");
          const outcome = await Promise.race([
            migrated,
            new Promise((r) => setTimeout(() => r("held up by the writer"), 5_000)),
          ]);
          await writer.query("rollback");
          await migrated;
          expect(outcome).toBe("migrated");
        } finally {
          await writer.end();
        }
      },
    );

    it("sums each gateway agent's sessions, kinds, hook calls and blocks", async () => {
      const now = Date.now();
      const started = (id: string, session: string, agent: string, kind: string) => {
        const body = JSON.parse(
          new TextDecoder().decode(eventMsg(id, "session_started", now, { agent, agent_kind: kind })),
        ) as {
          correlation: Record<string, unknown>;
        };
        body.correlation["session_id"] = session;
        return enc(body);
      };
      const call = (id: string, session: string, status: string) => {
        const body = JSON.parse(
          new TextDecoder().decode(
            eventMsg(id, "extension_invoked", now + 5, {
              surface: "hook",
              name: "PreToolUse",
              extension: "g",
              status,
              duration_ms: 1,
            }),
          ),
        ) as { correlation: Record<string, unknown> };
        body.correlation["session_id"] = session;
        return enc(body);
      };
      const msgs: Array<[number, Uint8Array]> = [
        [1001, started("aa1", "sa1", "alpha", "codex")],
        [1002, started("aa2", "sa2", "alpha", "claude-code")],
        [1003, started("ab1", "sb1", "beta", "gemini-cli")],
        [1004, call("ac1", "sa1", "ok")],
        [1005, call("ac2", "sa1", "block")],
        [1006, call("ac3", "sa2", "deny")],
      ];
      const decoded = msgs.map(([seq, data]) => decodeStreamMessage("events", seq, data));
      await writeBatch(p.db, {
        consumer: "agents",
        stream: "S2",
        lastSeq: 1006,
        activity: decoded.flatMap((d) => (d.type === "event" ? [d.activity] : [])),
        extension: decoded.flatMap((d) => (d.type === "event" && d.extension ? [d.extension] : [])),
      });
      const activity = await agentActivity(p.db, ns);
      // The other tests count rows: these leave none behind.
      await p.db
        .deleteFrom("activity_events")
        .where("stream_seq", ">=", 1001)
        .where("stream_seq", "<=", 1006)
        .execute();
      await p.db
        .deleteFrom("extension_invocations")
        .where("stream_seq", ">=", 1001)
        .where("stream_seq", "<=", 1006)
        .execute();
      await p.db.deleteFrom("projection_offsets").where("consumer", "=", "agents").execute();
      expect(activity).toEqual([
        {
          agent: "alpha",
          kinds: ["claude-code", "codex"],
          sessions: 2,
          last_seen: now + 5,
          hook_calls: 3,
          blocks: 2,
          guarded_hooks: [],
          last_check: null,
        },
        {
          agent: "beta",
          kinds: ["gemini-cli"],
          sessions: 1,
          last_seen: now,
          hook_calls: 0,
          blocks: 0,
          guarded_hooks: [],
          last_check: null,
        },
      ]);
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

    it("replay's secondary indexes: dropped for a bulk load, made again by any migration exactly as before", async () => {
      const indexes = async () =>
        (
          await sql<{ indexname: string; indexdef: string }>`
            select indexname, indexdef from pg_indexes where schemaname = ${ns} order by indexname`.execute(
            p.root,
          )
        ).rows;
      const before = await indexes();
      for (const i of SECONDARY_INDEXES) expect(before.map((r) => r.indexname)).toContain(i.name);
      await dropSecondaryIndexes(p.root, ns);
      const during = (await indexes()).map((r) => r.indexname);
      for (const i of SECONDARY_INDEXES) expect(during).not.toContain(i.name);
      expect(during.length).toBe(before.length - SECONDARY_INDEXES.length);
      await p.migrate();
      expect(await indexes()).toEqual(before);
    });

    it("stores tabs, newlines, carriage returns and backslashes exactly as sent", async () => {
      const tricky = "a\tb\nc\rd\\e\\N\\.\t";
      const d = decodeStreamMessage(
        "events",
        300,
        eventMsg(`id-${tricky}`, "memory_saved", Date.now(), {
          note: tricky,
          nested: { [tricky]: [tricky] },
        }),
      );
      expect(d.type).toBe("event");
      if (d.type !== "event") return;
      const result = await writeBatch(p.db, {
        consumer: "c",
        stream: "S",
        lastSeq: 300,
        activity: [d.activity],
      });
      expect(result.activity).toBe(1);
      const row = await p.db
        .selectFrom("activity_events")
        .selectAll()
        .where("stream_seq", "=", 300)
        .executeTakeFirstOrThrow();
      expect(row.event_id).toBe(`id-${tricky}`);
      expect(row.payload).toEqual({ note: tricky, nested: { [tricky]: [tricky] } });
      // Written again (a redelivery): nothing new, nothing changed.
      const again = await writeBatch(p.db, {
        consumer: "c",
        stream: "S",
        lastSeq: 300,
        activity: [d.activity],
      });
      expect(again.activity).toBe(0);
    });
  });
}

describe("event envelope decoding", () => {
  const valid = {
    id: "e1",
    event: "memory_saved",
    ts: 1_790_000_000_000,
    source: "test",
    correlation: {
      session_id: "s1",
      turn_id: "t1",
      step_id: "st",
      run_id: "",
      session_generation: 0,
      verify_attempt: 3,
      tool_call_id: "",
      llm_call_id: "",
      llm_attempt_id: "",
    },
    payload: { a: 1 },
  };
  const variants: Array<[string, unknown]> = [
    ["valid", valid],
    ["extra field", { ...valid, extra: 1 }],
    ["missing payload", { ...valid, payload: undefined }],
    ["empty id", { ...valid, id: "" }],
    ["unknown event", { ...valid, event: "nope" }],
    ["fractional ts", { ...valid, ts: 1.5 }],
    ["unsafe ts", { ...valid, ts: 2 ** 60 }],
    ["string ts", { ...valid, ts: "1" }],
    ["numeric source", { ...valid, source: 1 }],
    ["array payload", { ...valid, payload: [1] }],
    ["null payload", { ...valid, payload: null }],
    ["negative generation", { ...valid, correlation: { ...valid.correlation, session_generation: -1 } }],
    ["string attempt", { ...valid, correlation: { ...valid.correlation, verify_attempt: "1" } }],
    ["extra correlation field", { ...valid, correlation: { ...valid.correlation, x: "" } }],
    ["missing step_id", { ...valid, correlation: { ...valid.correlation, step_id: undefined } }],
    ["array", [valid]],
  ];
  it.each(variants)(
    "%s: stored exactly when the envelope schema accepts it, as the schema reads it",
    (_, body) => {
      const d = decodeStreamMessage("events", 1, enc(body));
      const schema = EventEnvelopeSchema.safeParse(JSON.parse(JSON.stringify(body)));
      expect(d.type).toBe(schema.success ? "event" : "rejected");
      if (d.type === "event" && schema.success) {
        expect(d.activity.event_id).toBe(schema.data.id);
        expect(d.activity.ts).toBe(schema.data.ts);
        expect(d.activity.session_generation).toBe(schema.data.correlation.session_generation);
        expect(d.activity.payload).toEqual(schema.data.payload);
      }
    },
  );
});

describe("stored payload JSON, made once while sanitizing", () => {
  const timeline = (payload: Record<string, unknown>) =>
    enc({
      id: "r1",
      kind: "session.started",
      ts: 1_790_000_000_000,
      source: "test",
      correlation: JSON.parse(new TextDecoder().decode(eventMsg("x", "memory_saved", 0))).correlation,
      payload,
      payload_sha256: "0".repeat(64),
    });
  it.each([
    ["plain", { a: 1, b: "x" }],
    ["cut by the 32 KiB bound", { big: "y".repeat(40_000), small: 1 }],
    ["with U+0000", { note: "a\u0000b" }],
    ["with a secret", { api_key: "sk-123", text: "ok" }],
  ])("%s: the JSON the writer sends and the row's hash are those of the stored payload", (_, payload) => {
    const d = decodeStreamMessage("timeline", 1, timeline(payload));
    expect(d.type).toBe("timeline");
    if (d.type !== "timeline") return;
    expect(storedPayloadJson(d.session.payload)).toBe(JSON.stringify(d.session.payload));
    expect(d.session.payload_sha256).toBe(sha256(d.session.payload));
    const e = decodeStreamMessage("events", 2, eventMsg("e", "memory_saved", 1, payload));
    if (e.type !== "event") throw new Error(e.type);
    expect(storedPayloadJson(e.activity.payload)).toBe(JSON.stringify(e.activity.payload));
  });
});

describe("correlation ids as stored", () => {
  it("an id holding a secret, a path or a control character is stored as its digest, the same in every table", () => {
    const secret = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123";
    const body = JSON.parse(new TextDecoder().decode(eventMsg("e-ids", "extension_invoked", 1))) as {
      correlation: Record<string, unknown>;
      payload: Record<string, unknown>;
    };
    body.correlation["session_id"] = secret;
    body.correlation["run_id"] = "../../escape";
    body.correlation["tool_call_id"] = "a\u0000b";
    body.payload = { surface: "hook", name: "PreToolUse", extension: "g", status: "ok", duration_ms: 1 };
    const d = decodeStreamMessage("events", 7, enc(body));
    if (d.type !== "event" || !d.extension) throw new Error(d.type);
    for (const row of [d.activity, d.extension]) {
      expect(JSON.stringify(row)).not.toContain("AbCdEfGh");
      expect(row.session_id).toMatch(/^redacted-[0-9a-f]{24}$/);
      expect(row.run_id).toMatch(/^redacted-[0-9a-f]{24}$/);
      expect(row.tool_call_id).toMatch(/^redacted-[0-9a-f]{24}$/);
      expect(row.turn_id).toBe("t1");
    }
    expect(d.extension.session_id).toBe(d.activity.session_id);
  });
});
