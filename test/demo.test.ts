import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { readAuditKeyFile } from "@geode/audit";
import { openProjectionDb, projectionNamespaces } from "@geode/projection";
import { cleanupNamespace, createTestEnv, type TestEnv } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderSummary } from "../packages/cli/src/demo/render-summary.js";
import { cleanupDemo, type DemoResult, demoPassed, runDemo } from "../packages/cli/src/demo/run-demo.js";
import { natsNamespaces } from "../packages/cli/src/namespaces/namespace-inventory.js";

describe("geode demo", () => {
  let env: TestEnv;
  let result: DemoResult;
  const progress: string[] = [];
  // A key file that does not exist yet: the demo makes it, as `geode up` does.
  const keyDir = mkdtempSync(path.join(tmpdir(), "geode-demo-key-"));
  const keyFile = path.join(keyDir, "audit.key");

  beforeAll(async () => {
    env = await createTestEnv();
    // As a newcomer runs it: GEODE_METRICS_PORT unset.
    const { GEODE_METRICS_PORT: _unset, ...parentEnv } = process.env;
    result = await runDemo({
      natsUrl: env.natsUrl,
      databaseUrl: env.databaseUrl,
      namespace: env.ns,
      env: { ...parentEnv, LOG_LEVEL: "warn", GEODE_AUDIT_KEY_FILE: keyFile },
      progress: (line) => progress.push(line),
    });
  }, 180_000);

  afterAll(async () => {
    if (result) await cleanupDemo(result);
    await cleanupNamespace(env.jsm, env.ns, env.databaseUrl);
    await env.cleanup();
    rmSync(keyDir, { recursive: true, force: true });
  });

  it("passes all 13 public hooks and all 4 middleware join points, each audited in Postgres", () => {
    const missing = result.surfaces.filter((s) => s.calls === 0).map((s) => s.name);
    expect(missing).toEqual([]);
    expect(result.surfaces).toHaveLength(17);
    const hook = (name: string) => result.surfaces.find((s) => s.surface === "hook" && s.name === name)!;
    // `policy` is the policy-guard service (no policy set stored: no decision); `policy-guard` the demo's own handler.
    expect(hook("PreToolUse").extensions).toEqual(["observer", "policy", "policy-guard"]);
    expect(hook("PreToolUse").statuses["block"]).toBe(1);
    expect(hook("PostVerify").extensions).toContain("ci-evaluator");
  });

  it("starts its services without competing for one metrics port (no service warns it cannot bind one)", () => {
    expect(progress.some((l) => l.includes("starting the services"))).toBe(true);
    expect(progress.filter((l) => /metrics not served|EADDRINUSE/.test(l))).toEqual([]);
  });

  it("records the same rows of the run in Postgres and in its events.jsonl", () => {
    expect(result.postgresRows).toBeGreaterThan(40);
    expect(result.jsonlRows).toBe(result.postgresRows);
  });

  it("replays the retried mutation from its receipt without executing it twice", () => {
    expect(result.session.write.status).toBe("completed");
    expect(result.session.retry.status).toBe("replayed");
    expect(result.session.retry.executed).toBe(false);
    expect(result.session.retry.result).toEqual(result.session.write.result);
    expect(result.writeExecutions).toBe(1);
  });

  it("blocks the dangerous tool, gets approval for the write, and revises once before accepting", () => {
    expect(result.session.blocked.status).toBe("blocked");
    expect(result.session.read.additional_context.length).toBe(1);
    expect(result.session.verifications.map((v) => v.policy_action)).toEqual(["revise", "accept"]);
    expect(result.session.verifications[1]!.deliver).toBe(true);
  });

  it("verifies its own run: both audit logs against the notary's signed checkpoints, projection included", () => {
    const { verifierKey } = readAuditKeyFile(keyFile);
    expect(progress.some((l) => l.includes(`made the audit signing key ${keyFile}`))).toBe(true);
    expect(result.audit).toEqual({
      status: "verified",
      verifierKey,
      logs: [
        expect.objectContaining({ origin: `geode/${env.ns}/events` }),
        expect.objectContaining({ origin: `geode/${env.ns}/timeline` }),
      ],
    });
    if (result.audit.status !== "verified") return;
    for (const log of result.audit.logs) {
      expect(log.leaves).toBeGreaterThan(0);
      // The latest checkpoint covers the whole log: nothing of the run is left unsigned.
      expect(log.checkpointSize).toBe(log.leaves);
    }
    const entries = result.audit.logs.reduce((s, l) => s + l.leaves, 0);
    const [events, timeline] = result.audit.logs.map((l) => l.leaves);
    const keyName = verifierKey.split("+").slice(0, 2).join("+");
    expect(renderSummary(result)).toContain(
      `  audit: the log of ${entries} entries (events ${events}, timeline ${timeline}) ` +
        `verifies against checkpoints signed by ${keyName}, projection rows included\n`,
    );
  });

  it("says so when its audit does not verify, and then fails; a skipped audit is said and not a failure", () => {
    expect(demoPassed(result)).toBe(true);
    const failed = {
      ...result,
      audit: { status: "failed", message: `geode/${env.ns}/events: modified: seq 3` },
    };
    expect(renderSummary(failed as DemoResult)).toContain(
      `  audit: DOES NOT VERIFY: geode/${env.ns}/events: modified: seq 3\n`,
    );
    expect(demoPassed(failed as DemoResult)).toBe(false);
    // Connected with NATS credentials the demo runs no notary (only the notary's own user may sign): not a failure.
    const skipped = {
      ...result,
      audit: { status: "skipped", reason: "the demo connects to NATS as operator" },
    };
    expect(renderSummary(skipped as DemoResult)).toContain(
      "  audit: not checked (the demo connects to NATS as operator)\n",
    );
    expect(demoPassed(skipped as DemoResult)).toBe(true);
  });

  it("removes its namespace at the end: streams, buckets, Postgres schema and run files", async () => {
    expect(result.removed?.streams.sort()).toEqual(
      [env.names.eventsStream, env.names.timelineStream, env.names.checkpointsStream].sort(),
    );
    expect(result.removed?.buckets.length).toBeGreaterThan(3);
    expect(result.removed?.schema).toBe(true);
    expect(result.removed?.runDirs).toEqual([path.dirname(result.jsonlFile)]);
    expect((await natsNamespaces(env.nc)).has(env.ns)).toBe(false);
    const db = await openProjectionDb({ ns: env.ns, databaseUrl: env.databaseUrl, migrate: false });
    try {
      expect((await projectionNamespaces(db.root)).has(env.ns)).toBe(false);
    } finally {
      await db.close();
    }
    expect(existsSync(result.jsonlFile)).toBe(false);
  });

  it("ends with a summary for people: what was removed, or with --keep what to look at next", () => {
    const text = renderSummary(result);
    expect(text).toContain("17/17 ran");
    expect(text).toContain("(equal)");
    expect(text).toContain(`removed namespace ${env.ns}: 3 streams`);
    expect(text).toContain("geode demo --keep");
    const kept = renderSummary({ ...result, removed: undefined });
    expect(kept).toContain(`GEODE_NAMESPACE=${env.ns} pnpm geode replay --rebuild`);
    expect(kept).toContain(`GEODE_NAMESPACE=${env.ns} pnpm geode audit verify --projection`);
    expect(kept).toContain(`geode ns rm ${env.ns} --yes`);
  });
});
