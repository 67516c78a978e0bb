import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { noteVerifier, openCheckpoint, writeAuditKeyFile } from "@geode/audit";
import { AuditCheckpointSchema } from "@geode/contracts";
import { AuditStore, startNotary } from "@geode/notary";
import { openProjectionDb } from "@geode/projection";
import { useTestEnv, waitFor } from "@geode/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, describe, expect, it } from "vitest";
import { useSecuredNats } from "./security-support.js";

// The notary on a nats-server that runs the generated per-role configuration, as its own user.
const env = useTestEnv(); // namespace and Postgres schema (dropped afterwards)
const { as, stops } = useSecuredNats(() => ({ namespace: env().ns }));
const dir = mkdtempSync(path.join(tmpdir(), "geode-notary-perm-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const denied = /Permissions Violation for Publish/;

describe("the notary's NATS user", () => {
  it("reads both streams, keeps its lease and publishes checkpoints; nobody else may publish one", {
    timeout: 120_000,
  }, async () => {
    const names = env().names;
    const keyFile = path.join(dir, "audit.key");
    const { verifierKey } = writeAuditKeyFile(keyFile, "perm-test");
    const notary = await startNotary({
      nc: await as("notary"),
      names,
      databaseUrl: env().databaseUrl,
      keyFile,
      checkpointMs: 200,
      leaseMs: 1_500,
    });
    stops.push(() => notary.stop());
    const runtime = jetstream(await as("runtime"));
    for (let i = 0; i < 5; i++) await runtime.publish(names.event("turn_completed"), JSON.stringify({ i }));
    await runtime.publish(names.timeline("tool.called"), JSON.stringify({}));

    const db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl, migrate: false });
    stops.push(() => db.close());
    const store = new AuditStore(db.root, env().ns);
    await waitFor(
      async () =>
        (await store.latestCheckpoint("events").catch(() => undefined))?.size === 5 &&
        (await store.latestCheckpoint("timeline").catch(() => undefined))?.size === 1,
      60_000,
      100,
    );
    expect(notary.active).toBe(true);

    // Published on the checkpoint stream, readable by an operator, signed by the notary's key.
    const operatorNc = await as("operator");
    const operator = jetstream(operatorNc);
    const jsm = await jetstreamManager(operatorNc, { checkAPI: false });
    const m = await jsm.streams.getMessage(names.checkpointsStream, {
      last_by_subj: names.auditCheckpoint("events"),
    });
    const cp = AuditCheckpointSchema.parse(m?.json());
    expect(cp.size).toBe(5);
    expect(openCheckpoint(cp.note, { verifiers: [noteVerifier(verifierKey)] }).checkpoint.size).toBe(5);

    // Neither the runtime nor an operator can publish a checkpoint of their own.
    for (const js of [runtime, operator])
      await expect(
        js.publish(names.auditCheckpoint("events"), JSON.stringify({ ...cp, size: 99 })),
      ).rejects.toThrow(denied);
  });
});
