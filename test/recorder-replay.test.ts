import net from "node:net";
import { type ActivityRecorder, startActivityRecorder } from "@geode/activity-recorder";
import { RuntimeEventBus } from "@geode/bus";
import { runCliCaptured } from "@geode/cli/testing";
import { RUNTIME_EVENTS } from "@geode/contracts";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { useTestEnv, waitFor } from "@geode/testing";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectionSnapshot } from "./recorder-support.js";

const DAY = 86_400_000;

const cli = (args: string[], env: Record<string, string>) => runCliCaptured(args, { ...process.env, ...env });

describe("geode replay, events tail, prune", () => {
  const env = useTestEnv();
  let db: ProjectionDb;
  let recorder: ActivityRecorder;
  let bus: RuntimeEventBus;

  beforeAll(async () => {
    const { nc, names, ns, databaseUrl } = env();
    db = await openProjectionDb({ ns, databaseUrl });
    recorder = await startActivityRecorder({ nc, names, db, runsDir: null });
    bus = await RuntimeEventBus.create({ nc, names, source: "replay-test" });
  });
  afterAll(async () => {
    await recorder?.stop();
    await db?.close();
  });

  it("--rebuild replay produces the same rows as the live projection", { timeout: 60_000 }, async () => {
    for (const [i, event] of RUNTIME_EVENTS.entries())
      void bus.emit(event, { i, text: `row ${i}` }, { session_id: `s${i % 3}`, turn_id: `t${i}` });
    const ended = await bus.emit("tool_exec_ended", { has_error: true }, { session_id: "s0" });
    void bus.emit("tool_exec_failed", { ended_event_id: ended!.id }, { session_id: "s0" });
    void bus.emit("extension_invoked", {
      surface: "hook",
      name: "Stop",
      extension: "h",
      status: "ok",
      reason: "",
      duration_ms: 2,
    });
    void bus.timeline("session.started", { model: "m" }, { session_id: "s0" });
    void bus.timeline("verification.decided", { policy_action: "accept" }, { session_id: "s0" });
    await env().js.publish(env().names.event("turn_completed"), "garbage");
    await bus.flush();
    const last = (await env().jsm.streams.info(env().names.eventsStream)).state.last_seq;
    await waitFor(
      async () => recorder.stats().events.lastSeq >= last && recorder.stats().timeline.lastSeq >= 2,
    );
    const live = await projectionSnapshot(db);
    const indexes = async () =>
      (
        await sql<{ indexdef: string }>`
          select indexdef from pg_indexes where schemaname = ${env().names.pgSchema} order by indexname`.execute(
          db.root,
        )
      ).rows;
    const liveIndexes = await indexes();
    expect(live.activity).toHaveLength(RUNTIME_EVENTS.length + 2);
    expect(live.session).toHaveLength(2);

    const r = await cli(["replay", "--rebuild"], env().env);
    expect(r.err).toContain("dropping the projection tables");
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/_EVENTS: seq 1\.\.\d+, 61 messages, 59 rows inserted/);
    expect(r.out).toMatch(/1 skipped .*1 rejected/);
    expect(r.out).toContain("replay done");
    expect(r.err).toMatch(/replay .*_EVENTS: 61\/61 \(100%\)/);
    expect(await projectionSnapshot(db)).toEqual(live);
    // The secondary indexes it dropped for the load are all back, as the migration made them.
    expect(await indexes()).toEqual(liveIndexes);

    // Replaying again over a complete projection changes nothing.
    const again = await cli(["replay", "--stream", "events", "--from-seq", "1"], env().env);
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/0 rows inserted, 59 already present/);
    expect(await projectionSnapshot(db)).toEqual(live);
  });

  it("replay refuses bad options with a usage error", async () => {
    expect((await cli(["replay", "--stream", "nope"], env().env)).code).toBe(2);
    expect((await cli(["replay", "--rebuild", "--from-seq", "3"], env().env)).code).toBe(2);
    expect((await cli(["events", "tail", "--event", "not_an_event"], env().env)).code).toBe(2);
  });

  it("replay and prune against an unreachable PostgreSQL: one line naming it, no password, no stack", async () => {
    // A loopback port nobody listens on (the listener is closed again before the commands run).
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, "127.0.0.1", () => {
        const addr = srv.address() as net.AddressInfo;
        srv.close(() => resolve(addr.port));
      });
    });
    const databaseUrl = `postgres://geode:s3cret@127.0.0.1:${port}/test`;
    for (const args of [["replay"], ["prune"]]) {
      const r = await cli(args, { ...env().env, DATABASE_URL: databaseUrl });
      expect(r.code).toBe(1);
      expect(r.err).toBe(
        `geode ${args[0]}: PostgreSQL at postgres://geode:***@127.0.0.1:${port}/test is not reachable: connect ECONNREFUSED 127.0.0.1:${port}\n  Start PostgreSQL there, or fix DATABASE_URL (unset, the embedded database under .geode/pgdata is used).\n`,
      );
    }
  });

  it("events tail prints live events as human-readable lines, filtered by event and session", async () => {
    const tail = cli(
      ["events", "tail", "--event", "memory_saved", "--session", "s-tail", "--limit", "2"],
      env().env,
    );
    // Tail starts at "new": publish until it has seen two matching events.
    let n = 0;
    const pump = setInterval(() => {
      n++;
      void bus.emit("memory_saved", { note: `kept ${n}` }, { session_id: "s-tail", turn_id: "t9" });
      void bus.emit("memory_saved", { note: "other session" }, { session_id: "s-other" });
      void bus.emit("turn_completed", { note: "other event" }, { session_id: "s-tail" });
    }, 100);
    const r = await tail.finally(() => clearInterval(pump));
    expect(r.code).toBe(0);
    // It says what it waits for (on stderr: stdout is the events).
    expect(r.err).toMatch(
      /^waiting for \S+\.events\.memory_saved on stream \S+_EVENTS \(namespace \S+, session s-tail\), new ones only/,
    );
    const lines = r.out.trim().split("\n");
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatch(
        /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s+memory_saved\s+replay-test\s+s-tail\/t9\s+note=kept \d+$/,
      );
    }
  });

  it("prune deletes only rows past their retention and prints counts per table", async () => {
    const now = Date.now();
    const publish = (id: string, event: string, ts: number) =>
      env().js.publish(
        env().names.event(event as "turn_completed"),
        JSON.stringify({
          id,
          event,
          ts,
          source: "old",
          correlation: { ...bus.envelope("turn_completed", {}).correlation, session_id: "s-prune" },
          payload: {},
        }),
      );
    await publish("p-old-ops", "turn_completed", now - 31 * DAY);
    await publish("p-new-ops", "turn_completed", now - 29 * DAY);
    await publish("p-old-debug", "cognitive_plan", now - 8 * DAY);
    await publish("p-ext-old", "extension_invoked", now - 181 * DAY);
    await publish("p-ext-new", "extension_invoked", now - 179 * DAY);
    const count = async () =>
      (
        await db.db
          .selectFrom("activity_events")
          .select("event_id")
          .where("session_id", "=", "s-prune")
          .execute()
      ).map((r) => r.event_id);
    await waitFor(async () => (await count()).length === 5);
    const r = await cli(["prune"], env().env);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/activity_events\s+3 deleted/);
    expect(r.out).toMatch(/extension_invocations\s+1 deleted/);
    expect(r.out).toMatch(/session_events\s+0 deleted/);
    expect((await count()).sort()).toEqual(["p-ext-new", "p-new-ops"]);
    expect(
      await db.db
        .selectFrom("extension_invocations")
        .select("ts")
        .where("session_id", "=", "s-prune")
        .execute(),
    ).toHaveLength(1);
  });
});
