import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { RuntimeEventBus } from "@geode/bus";
import { HealthReplySchema } from "@geode/contracts";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import {
  type PostgresServer,
  type SpawnedProcess,
  spawnService,
  startPostgresServer,
  useTestEnv,
  waitFor,
} from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countActivity, steadyLoad } from "./recorder-support.js";

/** Events per second of the steady load (the rate at which the recorder used to die). */
const RATE = 300;

describe("activity-recorder through PostgreSQL outages under load", () => {
  const env = useTestEnv();
  let pgServer: PostgresServer;
  let db: ProjectionDb;
  let recorder: SpawnedProcess;
  let bus: RuntimeEventBus;
  let load: ReturnType<typeof steadyLoad> | undefined;
  const session = "s-outage";
  const runsDir = mkdtempSync(path.join(tmpdir(), "geode-runs-"));

  beforeAll(async () => {
    pgServer = await startPostgresServer();
    db = await openProjectionDb({ ns: env().ns, databaseUrl: pgServer.url });
    bus = await RuntimeEventBus.create({ nc: env().nc, names: env().names, source: "outage-test" });
  }, 120_000);
  afterAll(async () => {
    await load?.stop();
    await recorder?.stop("SIGKILL");
    await db?.close();
    await pgServer?.destroy();
    rmSync(runsDir, { recursive: true, force: true });
  });

  const health = async () =>
    HealthReplySchema.parse(
      (await env().nc.request(env().names.health("activity-recorder"), "", { timeout: 5_000 })).json(),
    );

  const stored = () => countActivity(db, { session });

  it("stays up, says degraded with the reason, logs one line down and one up, and catches up with every event once", {
    timeout: 180_000,
  }, async () => {
    recorder = spawnService("services/activity-recorder/src/main.ts", {
      ...env().env,
      DATABASE_URL: pgServer.url,
      GEODE_RUNS_DIR: runsDir,
      LOG_LEVEL: "info",
    });
    await recorder.waitForOutput(/activity-recorder consuming/);
    load = steadyLoad(bus, { perSecond: RATE, session });
    const ids = load.ids;
    const measured: string[] = [];
    for (const mode of ["fast", "immediate"] as const) {
      await waitFor(async () => (await stored()) > 0 && (await health()).status === "ok", 30_000, 100);
      await db.close();
      await pgServer.stop(mode);
      const down = await waitFor(
        async () => {
          const h = await health();
          return h.status === "degraded" ? h : undefined;
        },
        20_000,
        50,
      );
      expect(down?.reason).toMatch(/projection database \(PostgreSQL at postgres:\/\/\S+\) unavailable: .+/);
      // The load goes on for a while against the stopped database.
      await new Promise((r) => setTimeout(r, 3_000));
      expect(recorder.child.exitCode).toBeNull();
      await pgServer.start();
      const restarted = Date.now();
      db = await openProjectionDb({ ns: env().ns, databaseUrl: pgServer.url, migrate: false });
      const publishedAtRestart = ids.length;
      await waitFor(async () => (await health()).status === "ok", 30_000, 50);
      await waitFor(async () => (await stored()) >= publishedAtRestart, 60_000, 50);
      measured.push(`${mode}: caught up ${((Date.now() - restarted) / 1000).toFixed(1)} s after restart`);
    }
    await load.stop();
    await waitFor(async () => (await stored()) === ids.length, 60_000, 100);

    // Every event exactly once.
    const rows = await db.db
      .selectFrom("activity_events")
      .select("event_id")
      .where("session_id", "=", session)
      .execute();
    const lost = ids.length - new Set(rows.map((r) => r.event_id)).size;
    const duplicated = rows.length - new Set(rows.map((r) => r.event_id)).size;
    expect({ lost, duplicated, rows: rows.length }).toEqual({ lost: 0, duplicated: 0, rows: ids.length });
    expect(new Set(rows.map((r) => r.event_id))).toEqual(new Set(ids));

    // One line when the projection went down and one when it came back, per outage; no stacks.
    expect(recorder.child.exitCode).toBeNull();
    const out = recorder.output();
    expect(out.match(/projection unavailable; retrying with backoff/g)).toHaveLength(2);
    expect(out.match(/projection available again after [\d.]+ s \(\d+ batches waited\)/g)).toHaveLength(2);
    expect(out).not.toMatch(/\n\s+at /);
    expect(out).not.toMatch(/"stack"/);
    console.info(
      `recorder outage: ${measured.join("; ")}; ${ids.length} events, lost ${lost}, duplicated ${duplicated}`,
    );
  });
});
