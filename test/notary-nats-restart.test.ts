import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { toBase64, writeAuditKeyFile } from "@geode/audit";
import { type NatsServerProcess, startNatsServer } from "@geode/cli";
import { freePort } from "@geode/local-server";
import { AuditStore } from "@geode/notary";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { type SpawnedProcess, spawnService, useTestEnv, waitFor } from "@geode/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { recomputeTree } from "./notary-support.js";

describe("notary through a NATS restart", () => {
  const env = useTestEnv(); // namespace and Postgres schema
  const dir = mkdtempSync(path.join(tmpdir(), "geode-notary-nats-"));
  const keyFile = path.join(dir, "audit.key");
  let nats: NatsServerProcess | undefined;
  let nc: NatsConnection | undefined;
  let notary: SpawnedProcess | undefined;
  let db: ProjectionDb | undefined;
  let published = 0;

  afterAll(async () => {
    await notary?.stop("SIGKILL");
    await nc?.close().catch(() => undefined);
    await nats?.stop();
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function publish(count: number): Promise<void> {
    const js = jetstream(nc!);
    for (let i = 0; i < count; i++) {
      published++;
      await js.publish(env().names.event("turn_completed"), JSON.stringify({ i: published }), {
        msgID: `restart-${published}`,
      });
    }
  }

  async function checkpointedAt(size: number): Promise<boolean> {
    const store = new AuditStore(db!.root, env().ns);
    return (await store.latestCheckpoint("events").catch(() => undefined))?.size === size;
  }

  it("goes on from where it was once its NATS is back, with the same tree as the stream's", {
    timeout: 180_000,
  }, async () => {
    writeAuditKeyFile(keyFile);
    const port = await freePort();
    const storeDir = path.join(dir, "nats");
    nats = await startNatsServer({ port, storeDir });
    nc = await connect({ servers: nats.url });
    db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl, migrate: false });
    notary = spawnService("services/notary/src/main.ts", {
      ...env().env,
      NATS_URL: nats.url,
      GEODE_AUDIT_KEY_FILE: keyFile,
      GEODE_AUDIT_CHECKPOINT_MS: "200",
      GEODE_AUDIT_LEASE_MS: "1500",
      LOG_LEVEL: "info",
    });
    await notary.waitForOutput(/notary started/);
    await publish(100);
    await waitFor(() => checkpointedAt(100), 60_000, 100);

    await nc.close();
    await nats.stop();
    nats = await startNatsServer({ port, storeDir });
    nc = await connect({ servers: nats.url });
    await publish(100);
    await waitFor(() => checkpointedAt(200), 90_000, 100);
    expect(notary.child.exitCode).toBeNull();
    const recomputed = await recomputeTree(
      { js: jetstream(nc), jsm: await jetstreamManager(nc), names: env().names },
      "events",
    );
    expect(recomputed.size).toBe(200);
    const store = new AuditStore(db.root, env().ns);
    expect((await store.latestCheckpoint("events"))?.root).toBe(toBase64(recomputed.root));
    expect(await notary.stop("SIGTERM")).toBe(0);
  });
});
