import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { toBase64, writeAuditKeyFile } from "@geode/audit";
import { HealthReplySchema } from "@geode/contracts";
import { AuditStore } from "@geode/notary";
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
import { recomputeTree } from "./notary-support.js";

describe("notary through a PostgreSQL outage", () => {
  const env = useTestEnv();
  let pgServer: PostgresServer;
  let db: ProjectionDb | undefined;
  let notary: SpawnedProcess | undefined;
  const dir = mkdtempSync(path.join(tmpdir(), "geode-notary-outage-"));
  const keyFile = path.join(dir, "audit.key");
  let published = 0;

  beforeAll(async () => {
    writeAuditKeyFile(keyFile);
    pgServer = await startPostgresServer();
  }, 120_000);
  afterAll(async () => {
    await notary?.stop("SIGKILL");
    await db?.close();
    await pgServer?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const health = async () =>
    HealthReplySchema.parse(
      (await env().nc.request(env().names.health("notary"), "", { timeout: 5_000 })).json(),
    );

  async function publish(count: number): Promise<void> {
    await Promise.all(
      Array.from({ length: count }, () => {
        published++;
        return env().js.publish(env().names.event("turn_completed"), JSON.stringify({ i: published }), {
          msgID: `outage-${published}`,
        });
      }),
    );
  }

  async function checkpointedAt(size: number): Promise<boolean> {
    db ??= await openProjectionDb({ ns: env().ns, databaseUrl: pgServer.url, migrate: false });
    const store = new AuditStore(db.root, env().ns);
    return (await store.latestCheckpoint("events").catch(() => undefined))?.size === size;
  }

  it("says degraded with the reason while the database is down, keeps running, then catches up", {
    timeout: 180_000,
  }, async () => {
    notary = spawnService("services/notary/src/main.ts", {
      ...env().env,
      DATABASE_URL: pgServer.url,
      GEODE_AUDIT_KEY_FILE: keyFile,
      GEODE_AUDIT_CHECKPOINT_MS: "200",
      GEODE_AUDIT_BATCH_SIZE: "50",
      LOG_LEVEL: "info",
    });
    await notary.waitForOutput(/notary started/);
    await publish(200);
    await waitFor(() => checkpointedAt(200), 60_000, 100);
    expect((await health()).status).toBe("ok");

    await db?.close();
    db = undefined;
    await pgServer.stop("immediate");
    await publish(300);
    const down = await waitFor(
      async () => {
        const h = await health();
        return h.status === "degraded" ? h : undefined;
      },
      30_000,
      50,
    );
    expect(down?.reason).toMatch(/audit database \(PostgreSQL at postgres:\/\/\S+\) unavailable: .+/);
    expect(down?.audit?.logs.find((l) => l.log === "events")?.size).toBe(200);
    expect(notary.child.exitCode).toBeNull();

    await pgServer.start();
    await waitFor(() => checkpointedAt(500), 60_000, 100);
    await waitFor(async () => (await health()).status === "ok", 30_000, 100);
    expect(notary.output()).toMatch(/audit database available again after/);
    const recomputed = await recomputeTree(env(), "events");
    expect(recomputed.size).toBe(500);
    const store = new AuditStore(db!.root, env().ns);
    expect((await store.latestCheckpoint("events"))?.root).toBe(toBase64(recomputed.root));
    expect(await notary.stop("SIGTERM")).toBe(0);
  });
});
