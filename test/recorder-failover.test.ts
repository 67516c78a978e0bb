import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { RuntimeEventBus } from "@geode/bus";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { type SpawnedProcess, spawnService, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countActivity, steadyLoad } from "./recorder-support.js";

/** Events per second of the steady load. */
const RATE = 300;

describe("activity-recorder replica SIGKILLed under load", () => {
  const env = useTestEnv();
  let db: ProjectionDb;
  let bus: RuntimeEventBus;
  const replicas: SpawnedProcess[] = [];
  const runsDir = mkdtempSync(path.join(tmpdir(), "geode-runs-"));
  let load: ReturnType<typeof steadyLoad> | undefined;

  beforeAll(async () => {
    db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl });
    bus = await RuntimeEventBus.create({ nc: env().nc, names: env().names, source: "failover-test" });
  });
  afterAll(async () => {
    await load?.stop();
    for (const r of replicas) await r.stop("SIGKILL");
    await db?.close();
    rmSync(runsDir, { recursive: true, force: true });
  });

  /** Rows of the events stream up to `seq` (every message of this namespace is one row). */
  const storedUpTo = (seq: number) => countActivity(db, { upToSeq: seq });

  it("the other replica has every event the dead one held within a few seconds; each exactly once", {
    timeout: 120_000,
  }, async () => {
    const childEnv = { ...env().env, GEODE_RUNS_DIR: runsDir, LOG_LEVEL: "info" };
    for (let i = 0; i < 2; i++) {
      const r = spawnService("services/activity-recorder/src/main.ts", childEnv);
      replicas.push(r);
      await r.waitForOutput(/activity-recorder consuming/);
    }
    load = steadyLoad(bus, { perSecond: RATE, session: "s-failover" });
    const ids = load.ids;
    // Both replicas hold batches of the shared consumer by now.
    await new Promise((r) => setTimeout(r, 3_000));
    await replicas[0]!.stop("SIGKILL");
    const killedAt = Date.now();
    await bus.flush();
    const seqAtKill = (await env().jsm.streams.info(env().names.eventsStream)).state.last_seq;
    // Everything published before the kill reaches the projection through the survivor. Before
    // in-progress acks and a short ack wait this took the full 30 s ack wait.
    await waitFor(async () => (await storedUpTo(seqAtKill)) === seqAtKill, 15_000, 25);
    const lagMs = Date.now() - killedAt;

    await new Promise((r) => setTimeout(r, 1_000));
    await load.stop();
    await waitFor(async () => (await storedUpTo(Number.MAX_SAFE_INTEGER)) === ids.length, 30_000, 50);
    const rows = await db.db.selectFrom("activity_events").select("event_id").execute();
    const distinct = new Set(rows.map((r) => r.event_id));
    expect({ rows: rows.length, distinct: distinct.size }).toEqual({
      rows: ids.length,
      distinct: ids.length,
    });
    expect(distinct).toEqual(new Set(ids));
    expect(replicas[1]!.child.exitCode).toBeNull();
    console.info(
      `recorder failover: projection complete up to the kill ${(lagMs / 1000).toFixed(1)} s after SIGKILL; ${ids.length} events, lost 0, duplicated 0`,
    );
  });
});
