import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { runCliCaptured } from "@geode/cli/testing";
import { CORRELATION_FIELDS, HealthReplySchema } from "@geode/contracts";
import { freePort } from "@geode/local-server";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { type SpawnedProcess, spawnService, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** One more than PostgreSQL's `integer` holds: valid on the wire, refused by the projection. */
const OVER_INT4 = 2 ** 31;

const emptyCorrelation = () =>
  Object.fromEntries(
    CORRELATION_FIELDS.map((f) => [f, f === "session_generation" || f === "verify_attempt" ? 0 : ""]),
  );

describe("activity-recorder: no message can stop the projection", () => {
  const env = useTestEnv();
  let db: ProjectionDb;
  let recorder: SpawnedProcess | undefined;
  let metricsPort: number;
  const session = `s-${randomUUID().slice(0, 8)}`;
  const runsDir = mkdtempSync(path.join(tmpdir(), "geode-runs-"));

  beforeAll(async () => {
    db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl });
    metricsPort = await freePort();
  });
  afterAll(async () => {
    await recorder?.stop("SIGKILL");
    await db?.close();
    rmSync(runsDir, { recursive: true, force: true });
  });

  /** Publishes a message as any NATS client could: raw bytes, past every sanitizer of the plane. */
  const publishRaw = async (subject: string, body: object): Promise<number> => {
    // JSON.stringify writes a lone surrogate as the escape `\ud800`, exactly as it arrives raw.
    const ack = await env().js.publish(subject, new TextEncoder().encode(JSON.stringify(body)));
    return ack.seq;
  };
  const event = (id: string, payload: object, correlation: object = {}, source = "raw-publisher") =>
    publishRaw(env().names.event("memory_saved"), {
      id,
      event: "memory_saved",
      ts: Date.now(),
      source,
      correlation: { ...emptyCorrelation(), session_id: session, ...correlation },
      payload,
    });
  const record = (id: string, correlation: object) =>
    publishRaw(env().names.timeline("session.started"), {
      id,
      kind: "session.started",
      ts: Date.now(),
      source: "raw-publisher",
      correlation: { ...emptyCorrelation(), session_id: session, ...correlation },
      payload: {},
      payload_sha256: "0".repeat(64),
    });

  const storedIds = async () =>
    (
      await db.db.selectFrom("activity_events").select("event_id").where("session_id", "=", session).execute()
    ).map((r) => r.event_id);
  const quarantined = () =>
    db.db.selectFrom("quarantined_messages").selectAll().orderBy("stream").orderBy("stream_seq").execute();
  const health = async () =>
    HealthReplySchema.parse(
      (await env().nc.request(env().names.health("activity-recorder"), "", { timeout: 5_000 })).json(),
    );

  it("projects a lone surrogate as U+FFFD, quarantines what PostgreSQL refuses, and goes on", {
    timeout: 180_000,
  }, async () => {
    recorder = spawnService("services/activity-recorder/src/main.ts", {
      ...env().env,
      GEODE_METRICS_PORT: String(metricsPort),
      GEODE_RUNS_DIR: runsDir,
      LOG_LEVEL: "info",
    });
    await recorder.waitForOutput(/activity-recorder consuming/, 60_000);

    await event("good-1", { note: "before" });
    // A lone surrogate in the payload (a key too), the source and a correlation id.
    await event(
      "lone-surrogate",
      { note: "a\ud800b", ["k\udc00"]: ["\udbff"] },
      {
        turn_id: "t\ud800",
      },
      "src\ud800",
    );
    // Valid on the wire, but more than the projection's integer column holds.
    const badEventSeq = await event("too-big", { note: "refused" }, { session_generation: OVER_INT4 });
    const badRecordSeq = await record("too-big-record", { session_generation: OVER_INT4 });
    await event("good-2", { note: "after" });
    await record("good-record", {});

    await waitFor(async () => (await storedIds()).includes("good-2"), 60_000, 100);
    expect((await storedIds()).sort()).toEqual(["good-1", "good-2", "lone-surrogate"]);
    const surrogate = await db.db
      .selectFrom("activity_events")
      .selectAll()
      .where("event_id", "=", "lone-surrogate")
      .executeTakeFirstOrThrow();
    expect(surrogate.payload).toEqual({ note: "a\ufffdb", "k\ufffd": ["\ufffd"] });
    expect(surrogate.source).toBe("src\ufffd");
    expect(surrogate.turn_id).toMatch(/^redacted-[0-9a-f]{24}$/);
    await waitFor(
      async () =>
        (
          await db.db
            .selectFrom("session_events")
            .select("record_id")
            .where("record_id", "=", "good-record")
            .execute()
        ).length === 1,
      60_000,
      100,
    );

    await waitFor(async () => (await quarantined()).length === 2, 30_000);
    const rows = await quarantined();
    expect(rows.map((r) => [r.stream, Number(r.stream_seq), r.name, r.sqlstate])).toEqual([
      [env().names.eventsStream, badEventSeq, "memory_saved", "22003"],
      [env().names.timelineStream, badRecordSeq, "session.started", "22003"],
    ]);
    for (const r of rows) {
      expect(r.session_id).toBe(session);
      expect(r.consumer).toBe("activity-recorder");
      expect(r.message_sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(r.error).toMatch(/out of range/);
      expect(r.subject).toMatch(new RegExp(`^${env().ns}\\.(events|timeline)\\.`));
    }

    // Health: ok (PostgreSQL is up), with a note naming the quarantined messages.
    await waitFor(async () => (await health()).note !== undefined, 40_000);
    const h = await health();
    expect(h.status).toBe("ok");
    expect(h.note).toContain("2 messages quarantined");
    expect(h.note).toContain(`${env().ns}.quarantined_messages`);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toContain(`geode_recorder_quarantined_total{stream="${env().names.eventsStream}"} 1`);
    expect(metrics).toContain(`geode_recorder_quarantined_total{stream="${env().names.timelineStream}"} 1`);
    const geodeHealth = await runCliCaptured(["health", "activity-recorder"], {
      ...process.env,
      ...env().env,
    });
    expect(geodeHealth.code).toBe(0);
    expect(geodeHealth.out).toContain("2 messages quarantined");

    // It keeps serving.
    await event("good-3", { note: "later" });
    await waitFor(async () => (await storedIds()).includes("good-3"), 60_000, 100);
    expect(recorder.child.exitCode).toBeNull();
    expect(recorder.output()).toMatch(/message quarantined: PostgreSQL refused it/);
    expect(recorder.output()).not.toMatch(/projection unavailable/);
    expect(await recorder.stop("SIGTERM", 30_000)).toBe(0);
    recorder = undefined;
  });

  it("geode replay --rebuild quarantines the same messages and projects the rest", {
    timeout: 120_000,
  }, async () => {
    const r = await runCliCaptured(["replay", "--rebuild"], { ...process.env, ...env().env });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/_EVENTS: .* 1 quarantined \(refused by the database\)/);
    expect(r.out).toMatch(/_TIMELINE: .* 1 quarantined \(refused by the database\)/);
    expect((await storedIds()).sort()).toEqual(["good-1", "good-2", "good-3", "lone-surrogate"]);
    const rows = await quarantined();
    expect(rows.map((q) => [q.name, q.consumer, q.sqlstate])).toEqual([
      ["memory_saved", "replay", "22003"],
      ["session.started", "replay", "22003"],
    ]);
  });
});
