import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startActivityRecorder } from "@geode/activity-recorder";
import { RuntimeEventBus } from "@geode/bus";
import { countRows, normalizeRow, openProjectionDb, readOffsets } from "@geode/projection";
import { createRuns } from "@geode/runtime";
import { useTestEnv, waitFor } from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";

describe("activity-recorder on embedded PGlite (DATABASE_URL unset)", () => {
  const env = useTestEnv();
  const dir = mkdtempSync(path.join(tmpdir(), "geode-pglite-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("projects events and timeline, mirrors the run, and keeps everything across a restart", {
    timeout: 120_000,
  }, async () => {
    const { nc, names } = env();
    const pgliteDir = path.join(dir, "pgdata");
    const runsDir = path.join(dir, "runs");
    const bus = await RuntimeEventBus.create({ nc, names, source: "pglite-test" });
    await createRuns(env()).open("run-lite");

    const first = await startActivityRecorder({ nc, names, databaseUrl: undefined, pgliteDir, runsDir });
    expect(first.db.kind).toBe("pglite");
    for (let i = 0; i < 20; i++)
      await bus.emit("turn_completed", { i }, { session_id: "s-lite", run_id: "run-lite" });
    await bus.emit(
      "extension_invoked",
      { surface: "hook", name: "Stop", extension: "h", status: "ok", reason: "", duration_ms: 1 },
      { session_id: "s-lite" },
    );
    await bus.timeline("session.started", { model: "m" }, { session_id: "s-lite", run_id: "run-lite" });
    await waitFor(async () => {
      const c = await countRows(first.db.db);
      return c.activity_events === 21 && c.session_events === 1 && c.extension_invocations === 1;
    }, 20_000);
    await first.stop();

    // Restart on the same data directory: the rows and offsets are there, nothing is applied twice.
    for (let i = 20; i < 25; i++)
      await bus.emit("turn_completed", { i }, { session_id: "s-lite", run_id: "run-lite" });
    const second = await startActivityRecorder({ nc, names, pgliteDir, runsDir });
    try {
      await waitFor(async () => (await countRows(second.db.db)).activity_events === 26, 20_000);
      const rows = (
        await second.db.db
          .selectFrom("activity_events")
          .selectAll()
          .where("run_id", "=", "run-lite")
          .orderBy("stream_seq")
          .execute()
      ).map(normalizeRow);
      expect(rows.map((r) => r.payload["i"])).toEqual(Array.from({ length: 25 }, (_, i) => i));
      expect(typeof rows[0]!.stream_seq).toBe("number");
      const last = (await env().jsm.streams.info(names.eventsStream)).state.last_seq;
      await waitFor(async () => (await readOffsets(second.db.db)).some((o) => o.last_seq === last));
      // Mirrored after the commit, before the ack: wait for the ack of the last message.
      await waitFor(() => second.stats().events.lastSeq === last);
      const lines = readFileSync(path.join(runsDir, "run-lite", "events.jsonl"), "utf8")
        .trim()
        .split("\n");
      expect(lines).toHaveLength(25); // the 25 activity rows of the run, each once
    } finally {
      await second.stop();
    }
    // The default location is the embedded database, not a server.
    const lite = await openProjectionDb({ ns: env().ns, pgliteDir, migrate: false });
    expect(lite.kind).toBe("pglite");
    await lite.close();
  });
});
