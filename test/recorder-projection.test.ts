import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type ActivityRecorder, startActivityRecorder } from "@geode/activity-recorder";
import { RuntimeEventBus } from "@geode/bus";
import { CORRELATION_FIELDS, RUNTIME_EVENTS } from "@geode/contracts";
import { countRows, normalizeRow, openProjectionDb, type ProjectionDb } from "@geode/projection";
import { createRuns } from "@geode/runtime";
import { useTestEnv, waitFor } from "@geode/testing";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const RUN_FILE_MAX = 8 * 1024;

describe("activity-recorder projection (PostgreSQL)", () => {
  const env = useTestEnv();
  let db: ProjectionDb;
  let recorder: ActivityRecorder;
  let bus: RuntimeEventBus;
  let runsDir: string;

  beforeAll(async () => {
    const { nc, names, ns, databaseUrl } = env();
    runsDir = mkdtempSync(path.join(tmpdir(), "geode-runs-"));
    db = await openProjectionDb({ ns, databaseUrl });
    recorder = await startActivityRecorder({ nc, names, db, runsDir, runFileMaxBytes: RUN_FILE_MAX });
    bus = await RuntimeEventBus.create({ nc, names, source: "test" });
  });
  afterAll(async () => {
    await recorder?.stop();
    await db?.close();
    rmSync(runsDir, { recursive: true, force: true });
  });

  const activityCount = async (where: (q: ReturnType<typeof base>) => ReturnType<typeof base> = (q) => q) =>
    Number(
      (
        await where(base())
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const base = () => db.db.selectFrom("activity_events");
  /** Every message published so far is committed, mirrored and acked (the mirror runs before the ack). */
  const settled = async () => {
    const { jsm, names } = env();
    const e = (await jsm.streams.info(names.eventsStream)).state.last_seq;
    const t = (await jsm.streams.info(names.timelineStream)).state.last_seq;
    await waitFor(() => recorder.stats().events.lastSeq >= e && recorder.stats().timeline.lastSeq >= t);
  };

  it("stores 57 distinct events as 57 rows with their correlation ids; a duplicate publish stays one row", async () => {
    const session = "s-catalog";
    const sent = [];
    for (const [i, event] of RUNTIME_EVENTS.entries()) {
      sent.push(
        await bus.emit(
          event,
          { index: i },
          {
            session_id: session,
            turn_id: `turn-${i}`,
            step_id: `step-${i}`,
            run_id: "",
            session_generation: 3,
            verify_attempt: i % 3,
            tool_call_id: `tc-${i}`,
            llm_call_id: `lc-${i}`,
            llm_attempt_id: `la-${i}`,
          },
        ),
      );
    }
    // The same id again, through the bus (deduplicated by JetStream) and as a raw publish under
    // another Nats-Msg-Id (a new stream message, deduplicated by the projection's unique event id).
    const first = sent[0]!;
    await bus.emit(first.event, first.payload, first.correlation, { id: first.id });
    await env().js.publish(env().names.event(first.event), JSON.stringify(first), {
      msgID: "another-msg-id",
    });
    await waitFor(async () => (await activityCount((q) => q.where("session_id", "=", session))) >= 57);
    await bus.emit("turn_completed", {}, { session_id: "barrier" });
    await waitFor(async () => (await activityCount((q) => q.where("session_id", "=", "barrier"))) === 1);

    const rows = (
      await base().selectAll().where("session_id", "=", session).orderBy("stream_seq").execute()
    ).map(normalizeRow);
    expect(rows).toHaveLength(57);
    expect(new Set(rows.map((r) => r.event))).toEqual(new Set(RUNTIME_EVENTS));
    for (const env of sent) {
      const row = rows.find((r) => r.event_id === env!.id)!;
      for (const f of CORRELATION_FIELDS) expect(row[f]).toBe(env!.correlation[f]);
      expect(row.ts).toBe(env!.ts);
      expect(row.source).toBe("test");
    }
    expect(rows.find((r) => r.event === "extension_invoked")!.retention_bucket).toBe("audit");
    expect(rows.find((r) => r.event === "cognitive_plan")!.retention_bucket).toBe("debug");
    expect(rows.find((r) => r.event === "turn_completed")!.retention_bucket).toBe("ops");
    expect(
      await db.db.selectFrom("extension_invocations").selectAll().where("session_id", "=", session).execute(),
    ).toHaveLength(1);
  });

  it("does not store a tool_exec_failed that repeats an errored tool_exec_ended; a plain one is stored", async () => {
    const s = { session_id: "s-tool-failed" };
    const ended = await bus.emit("tool_exec_ended", { tool_name: "fs.read", has_error: true }, s);
    await bus.emit("tool_exec_failed", { tool_name: "fs.read", ended_event_id: ended!.id }, s);
    await bus.emit("tool_exec_failed", { tool_name: "shell", error: "spawn failed" }, s);
    await bus.emit("turn_completed", {}, s);
    await waitFor(async () => (await activityCount((q) => q.where("session_id", "=", s.session_id))) === 3);
    const events = await base()
      .select("event")
      .where("session_id", "=", s.session_id)
      .orderBy("stream_seq")
      .execute();
    expect(events.map((e) => e.event)).toEqual(["tool_exec_ended", "tool_exec_failed", "turn_completed"]);
  });

  it("acks bad messages without storing them and keeps projecting", async () => {
    const { js, names, jsm } = env();
    await js.publish(names.event("turn_completed"), new Uint8Array([0xff, 0xfe, 0x00]));
    await js.publish(names.event("turn_completed"), "not json at all");
    await js.publish(names.event("turn_completed"), JSON.stringify({ id: "x", event: "turn_completed" }));
    await js.publish(
      names.event("memory_saved"),
      JSON.stringify({
        id: "bad-event",
        event: "no_such_event",
        ts: 1,
        source: "x",
        correlation: {},
        payload: {},
      }),
    );
    await js.publish(names.timeline("session.started"), JSON.stringify({ kind: "session.started" }));
    await bus.emit("turn_completed", { note: "after\u0000bad" }, { session_id: "s-after-bad" });
    await bus.timeline("session.started", { model: "m" }, { session_id: "s-after-bad" });
    await waitFor(async () => (await activityCount((q) => q.where("session_id", "=", "s-after-bad"))) === 1);
    await waitFor(async () => {
      const n = await db.db
        .selectFrom("session_events")
        .select("kind")
        .where("session_id", "=", "s-after-bad")
        .execute();
      return n.length === 1;
    });
    expect(await activityCount((q) => q.where("event_id", "in", ["x", "bad-event"]))).toBe(0);
    // Acked: nothing waits for redelivery on either consumer.
    await waitFor(async () => {
      const e = await jsm.consumers.info(names.eventsStream, "activity-recorder");
      const t = await jsm.consumers.info(names.timelineStream, "activity-recorder");
      return e.num_ack_pending === 0 && e.num_pending === 0 && t.num_ack_pending === 0 && t.num_pending === 0;
    });
    expect(recorder.stats().events.rejected).toBeGreaterThanOrEqual(4);
  });

  it("mirrors rows to JSONL only for an open run, within open..close, and never secrets or prompts", async () => {
    const runs = createRuns(env());
    const SECRET = "sk-live-PLANTEDSECRET0123456789abcdef";
    const PROMPT = "planted user prompt: please wire my savings to account 42";
    const run = "run-open-1";
    await bus.emit("turn_completed", { before: true }, { run_id: run, session_id: "s-run" });
    await bus.flush();
    await new Promise((r) => setTimeout(r, 5));
    await runs.open(run);
    await bus.emit("user_input_received", { chars: 12 }, { run_id: run, session_id: "s-run" });
    await bus.emit(
      "extension_invoked",
      {
        surface: "hook",
        name: "UserPromptSubmit",
        extension: "guard",
        status: "block",
        reason: `prompt refused; key ${SECRET}`,
        duration_ms: 3.5,
        user_input: PROMPT,
        note: `key ${SECRET}`,
      },
      { run_id: run, session_id: "s-run" },
    );
    // A publisher that skipped sanitizing: the recorder bounds and masks again.
    await env().js.publish(
      env().names.event("memory_saved"),
      JSON.stringify({
        id: "raw-unsanitized",
        event: "memory_saved",
        ts: Date.now(),
        source: "raw",
        correlation: { ...emptyCorrelation(), run_id: run, session_id: "s-run" },
        payload: { api_key: SECRET, text: `bearer ${SECRET}` },
      }),
    );
    await bus.timeline("tool.called", { tool_name: "fs.read" }, { run_id: run, session_id: "s-run" });
    await bus.emit("turn_completed", {}, { run_id: "run-never-opened", session_id: "s-run" });
    await bus.flush();
    await runs.close(run);
    await new Promise((r) => setTimeout(r, 5));
    await bus.emit("turn_completed", { after: true }, { run_id: run, session_id: "s-run" });
    await bus.emit("turn_completed", {}, { session_id: "s-run", run_id: "" });
    await waitFor(async () => (await activityCount((q) => q.where("session_id", "=", "s-run"))) === 7);

    await settled();
    const file = path.join(runsDir, run, "events.jsonl");
    const lines = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const opened = (await runs.get(run))!;
    const inWindow = (await base().select(["stream_seq", "ts"]).where("run_id", "=", run).execute())
      .map(normalizeRow)
      .filter((r) => r.ts >= opened.opened_at && r.ts <= opened.closed_at!);
    // One line per activity row of the run inside open..close; timeline records are not mirrored.
    expect(lines).toHaveLength(inWindow.length);
    expect(lines.every((l) => l["type"] === "activity_events")).toBe(true);
    expect(
      lines
        .filter((l) => l["type"] === "activity_events")
        .map((l) => l["stream_seq"])
        .sort(),
    ).toEqual(inWindow.map((r) => r.stream_seq).sort());
    expect(lines.every((l) => l["run_id"] === run)).toBe(true);
    expect(
      lines.some(
        (l) =>
          (l["payload"] as Record<string, unknown>)["before"] ||
          (l["payload"] as Record<string, unknown>)["after"],
      ),
    ).toBe(false);
    expect(readdirSync(runsDir)).not.toContain("run-never-opened");

    // Every column of every table, every JSONL line: neither the secret nor the prompt.
    const text = readFileSync(file, "utf8");
    for (const planted of [SECRET, PROMPT, "PLANTEDSECRET", "wire my savings"]) {
      expect(text).not.toContain(planted);
      for (const table of [
        "activity_events",
        "extension_invocations",
        "session_events",
        "projection_offsets",
      ]) {
        const hits = await sql<{
          n: number;
        }>`select count(*)::int as n from ${sql.table(`${env().ns}.${table}`)} t where t::text like ${`%${planted}%`}`.execute(
          db.db,
        );
        expect(hits.rows[0]!.n, `${planted} in ${table}`).toBe(0);
      }
    }
    const ext = normalizeRow(
      await db.db
        .selectFrom("extension_invocations")
        .selectAll()
        .where("run_id", "=", run)
        .executeTakeFirstOrThrow(),
    );
    expect(Object.keys(ext).sort()).toEqual(
      [
        ...CORRELATION_FIELDS,
        "stream_seq",
        "ts",
        "surface",
        "name",
        "extension",
        "status",
        "latency_ms",
        "trace_id",
      ].sort(),
    );
    expect(ext).toMatchObject({
      surface: "hook",
      name: "UserPromptSubmit",
      extension: "guard",
      status: "block",
      latency_ms: 3.5,
    });
    // The event's reason stays in its activity row only, the secret in it masked; nothing else the
    // publisher added (user_input, note) is stored.
    const audit = await db.db
      .selectFrom("activity_events")
      .select("payload")
      .where("run_id", "=", run)
      .where("event", "=", "extension_invoked")
      .executeTakeFirstOrThrow();
    const stored = audit.payload as Record<string, unknown>;
    expect(Object.keys(stored).sort()).toEqual(
      ["duration_ms", "extension", "name", "reason", "status", "surface"].sort(),
    );
    expect(String(stored["reason"])).toMatch(/^prompt refused; key /);
  });

  it("stops a run file at its bound with one projection.truncated row", async () => {
    const runs = createRuns(env());
    const run = "run-big";
    await runs.open(run);
    for (let i = 0; i < 60; i++)
      await bus.emit("turn_completed", { filler: "x".repeat(200), i }, { run_id: run });
    await bus.flush();
    await waitFor(async () => (await activityCount((q) => q.where("run_id", "=", run))) === 60);
    await waitFor(() =>
      readFileSync(path.join(runsDir, run, "events.jsonl"), "utf8").includes("projection.truncated"),
    );
    await bus.emit("turn_completed", { i: "late" }, { run_id: run });
    await waitFor(async () => (await activityCount((q) => q.where("run_id", "=", run))) === 61);
    await bus.emit("turn_completed", {}, { session_id: "barrier-2" });
    await waitFor(async () => (await activityCount((q) => q.where("session_id", "=", "barrier-2"))) === 1);
    await settled();
    const raw = readFileSync(path.join(runsDir, run, "events.jsonl"), "utf8");
    const lines = raw
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(Buffer.byteLength(raw)).toBeLessThanOrEqual(RUN_FILE_MAX);
    expect(lines.filter((l) => l["type"] === "projection.truncated")).toHaveLength(1);
    expect(lines.at(-1)!["type"]).toBe("projection.truncated");
    expect(lines.length).toBeLessThan(61);
    expect((await countRows(db.db)).activity_events).toBeGreaterThan(61);
  });
});

function emptyCorrelation() {
  return {
    session_id: "",
    turn_id: "",
    step_id: "",
    run_id: "",
    session_generation: 0,
    verify_attempt: 0,
    tool_call_id: "",
    llm_call_id: "",
    llm_attempt_id: "",
  };
}
