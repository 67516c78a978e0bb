import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startActivityRecorder } from "@geode/activity-recorder";
import { RuntimeEventBus } from "@geode/bus";
import { HealthReplySchema } from "@geode/contracts";
import { openProjectionDb, type ProjectionDb, readOffsets } from "@geode/projection";
import { createRuns } from "@geode/runtime";
import { type SpawnedProcess, spawnService, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countActivity } from "./recorder-support.js";

const TOTAL = 4_000;

/** SIGKILL the service process itself (spawnService runs it as the direct child). */
async function killHard(p: SpawnedProcess): Promise<void> {
  await p.stop("SIGKILL");
}

describe("activity-recorder crash and replicas", () => {
  const env = useTestEnv();
  let db: ProjectionDb;
  const runsDir = mkdtempSync(path.join(tmpdir(), "geode-runs-"));
  const children: SpawnedProcess[] = [];

  beforeAll(async () => {
    db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl });
  });
  afterAll(async () => {
    for (const c of children) await killHard(c);
    await db?.close();
    rmSync(runsDir, { recursive: true, force: true });
  });

  const count = (session: string) => countActivity(db, { session });

  async function publish(session: string, n: number, runId = ""): Promise<string[]> {
    const bus = await RuntimeEventBus.create({ nc: env().nc, names: env().names, source: "crash-test" });
    const ids: string[] = [];
    for (let i = 0; i < n; i += 500) {
      const chunk = Array.from({ length: Math.min(500, n - i) }, (_, k) => {
        const id = randomUUID();
        ids.push(id);
        return bus.emit("turn_completed", { i: i + k }, { session_id: session, run_id: runId }, { id });
      });
      expect((await Promise.all(chunk)).every((e) => e !== null)).toBe(true);
    }
    return ids;
  }

  async function expectExactlyOnce(session: string, ids: string[]) {
    const rows = await db.db
      .selectFrom("activity_events")
      .select("event_id")
      .where("session_id", "=", session)
      .execute();
    expect(rows).toHaveLength(ids.length);
    expect(new Set(rows.map((r) => r.event_id))).toEqual(new Set(ids));
  }

  it("SIGKILL mid-batch, then restart: every event appears exactly once; health answers", {
    timeout: 60_000,
  }, async () => {
    const session = "s-crash";
    await createRuns(env()).open("run-crash");
    const ids = await publish(session, TOTAL, "run-crash");
    const childEnv = {
      ...env().env,
      GEODE_RUNS_DIR: runsDir,
      GEODE_RECORDER_BATCH_SIZE: "100",
      GEODE_RECORDER_ACK_WAIT_MS: "1500",
      LOG_LEVEL: "info",
    };
    const first = spawnService("services/activity-recorder/src/main.ts", childEnv);
    children.push(first);
    await first.waitForOutput(/activity-recorder started/);
    const health = HealthReplySchema.parse(
      (await env().nc.request(env().names.health("activity-recorder"), "", { timeout: 5_000 })).json(),
    );
    expect(health).toMatchObject({ service: "activity-recorder", status: "ok" });
    await waitFor(async () => (await count(session)) > 0, 20_000, 5);
    await killHard(first);
    const atKill = await count(session);
    expect(atKill).toBeLessThan(TOTAL);

    const second = spawnService("services/activity-recorder/src/main.ts", childEnv);
    children.push(second);
    await waitFor(async () => (await count(session)) === TOTAL, 30_000, 50);
    await expectExactlyOnce(session, ids);
    const info = await env().jsm.streams.info(env().names.eventsStream);
    await waitFor(async () => {
      const offsets = await readOffsets(db.db);
      return offsets.find((o) => o.stream === env().names.eventsStream)?.last_seq === info.state.last_seq;
    });
    // The run file, written between commit and ack, holds every event of the run exactly once.
    await waitFor(async () => {
      const c = await env().jsm.consumers.info(env().names.eventsStream, "activity-recorder");
      return c.num_ack_pending === 0 && c.num_pending === 0;
    });
    const lines = readFileSync(path.join(runsDir, "run-crash", "events.jsonl"), "utf8")
      .trim()
      .split("\n");
    const ids2 = lines.map((l) => (JSON.parse(l) as { event_id: string }).event_id);
    expect(ids2).toHaveLength(TOTAL);
    expect(new Set(ids2)).toEqual(new Set(ids));
    await second.stop("SIGTERM");
  });

  it("two replicas on one durable consumer: every event exactly once", { timeout: 60_000 }, async () => {
    const session = "s-replicas";
    const [a, b] = await Promise.all(
      [0, 1].map(async (i) =>
        startActivityRecorder({
          nc: await env().connect(`replica-${i}`),
          names: env().names,
          databaseUrl: env().databaseUrl,
          runsDir: null,
          batchSize: 100,
        }),
      ),
    );
    try {
      const ids = await publish(session, TOTAL);
      await waitFor(async () => (await count(session)) === TOTAL, 30_000, 50);
      await expectExactlyOnce(session, ids);
      // Acked after commit: every message is acked by one replica or the other.
      await waitFor(() => a!.stats().events.applied + b!.stats().events.applied >= TOTAL);
      // Both took part: the batches of one stream were spread over the two replicas.
      expect(a!.stats().events.batches).toBeGreaterThan(0);
      expect(b!.stats().events.batches).toBeGreaterThan(0);
    } finally {
      await Promise.all([a!.stop(), b!.stop()]);
    }
  });
});
