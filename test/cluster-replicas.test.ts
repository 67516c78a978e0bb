import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { writeAuditKeyFile } from "@geode/audit";
import { configuredReplicas, ensureBucket, ensureDurableConsumer, ensureEventStreams } from "@geode/bus";
import { runCliCaptured } from "@geode/cli/testing";
import { names as buildNames, SERVICE_NAMES } from "@geode/contracts";
import { ConfigError } from "@geode/env";
import {
  cleanupNamespace,
  type SpawnedProcess,
  spawnService,
  uniqueNamespace,
  useTestEnv,
  waitFor,
} from "@geode/testing";
import { AckPolicy, type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type NatsCluster, startCluster } from "../infra/cluster/cluster.js";

/** Every stream of `ns` (its two streams and its buckets' streams) with its replica count. */
async function replicasOf(jsm: JetStreamManager, ns: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for await (const si of jsm.streams.list())
    if (si.config.name.startsWith(`${ns.toUpperCase()}_`) || si.config.name.startsWith(`KV_${ns}_`))
      out[si.config.name] = si.config.num_replicas;
  return out;
}

describe("GEODE_STREAM_REPLICAS", () => {
  const env = useTestEnv();

  it("accepts 1, 3 or 5 and refuses anything else, naming the variable", () => {
    expect(configuredReplicas({})).toBe(1);
    expect(configuredReplicas({ GEODE_STREAM_REPLICAS: "3" })).toBe(3);
    expect(configuredReplicas({ GEODE_STREAM_REPLICAS: "5" })).toBe(5);
    for (const bad of ["2", "0", "4", "3.0", "three", "-1"])
      expect(() => configuredReplicas({ GEODE_STREAM_REPLICAS: bad }), bad).toThrow(
        `GEODE_STREAM_REPLICAS must be 1, 3 or 5, got "${bad}"`,
      );
  });

  it("a single server refuses three replicas with the count and the cluster size, and creates nothing", async () => {
    const err = await ensureEventStreams(env().nc, env().names, { replicas: 3 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      /^GEODE_STREAM_REPLICAS=3 cannot be placed: the NATS server is not clustered \(1 node\)/,
    );
    expect(await replicasOf(env().jsm, env().ns)).toEqual({});
  });

  it("a service started with a bad count stops with exit 2 and one line naming it", async () => {
    const p = spawnService("services/hook-dispatcher/src/main.ts", {
      ...env().env,
      GEODE_STREAM_REPLICAS: "2",
    });
    expect(await p.exited).toBe(2);
    expect(p.output()).toContain('GEODE_STREAM_REPLICAS must be 1, 3 or 5, got "2"');
    const q = spawnService("services/verifier/src/main.ts", { ...env().env, GEODE_STREAM_REPLICAS: "3" });
    expect(await q.exited).toBe(2);
    expect(q.output()).toContain(
      "verifier: GEODE_STREAM_REPLICAS=3 cannot be placed: the NATS server is not clustered",
    );
  });
});

describe("GEODE_STREAM_REPLICAS on a three-node cluster", () => {
  const env = useTestEnv();
  let cluster: NatsCluster;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const ns = uniqueNamespace("r");
  const procs: SpawnedProcess[] = [];
  const runsDir = mkdtempSync(path.join(tmpdir(), "geode-runs-"));
  const keyFile = path.join(runsDir, "audit.key");

  beforeAll(async () => {
    writeAuditKeyFile(keyFile);
    cluster = await startCluster();
    nc = await connect({ servers: cluster.url.split(",") });
    jsm = await jetstreamManager(nc, { checkAPI: false });
  });
  afterAll(async () => {
    for (const p of procs) await p.stop("SIGKILL");
    if (jsm) await cleanupNamespace(jsm, ns, env().databaseUrl).catch(() => undefined);
    await nc?.close();
    await cluster?.stop();
    rmSync(runsDir, { recursive: true, force: true });
  });

  // The test's PostgreSQL, never the embedded PGlite of the checkout: another test file running
  // at the same time may own that one, and the recorder would then refuse to start.
  const childEnv = (replicas: string) => ({
    NATS_URL: cluster.url,
    DATABASE_URL: env().databaseUrl,
    GEODE_NAMESPACE: ns,
    GEODE_STREAM_REPLICAS: replicas,
    GEODE_RUNS_DIR: runsDir,
    GEODE_GATEWAY_ADDR: "127.0.0.1:0",
    GEODE_AUDIT_KEY_FILE: keyFile,
    LOG_LEVEL: "info",
  });

  it("every stream, bucket and durable consumer the services create has three replicas", {
    timeout: 120_000,
  }, async () => {
    for (const service of SERVICE_NAMES) {
      const p = spawnService(`services/${service}/src/main.ts`, childEnv("3"));
      procs.push(p);
      await p.waitForOutput(new RegExp(`${service} started`), 60_000);
    }
    const n = buildNames(ns);
    const replicas = await replicasOf(jsm, ns);
    expect(replicas).toEqual({
      [n.eventsStream]: 3,
      [n.timelineStream]: 3,
      [n.checkpointsStream]: 3,
      ...Object.fromEntries(Object.values(n.buckets).map((b) => [`KV_${b}`, 3])),
    });
    // The durable ones: the notary's ordered consumers are ephemeral, in memory, one replica.
    const consumers: Record<string, number> = {};
    for (const stream of [n.eventsStream, n.timelineStream])
      for await (const ci of jsm.consumers.list(stream))
        if (ci.config.durable_name) consumers[`${stream}/${ci.name}`] = ci.config.num_replicas ?? 0;
    expect(Object.keys(consumers).length).toBeGreaterThanOrEqual(3); // recorder ×2, verifier's cleanup
    for (const [name, r] of Object.entries(consumers)) expect(r, name).toBe(3);
    // What an operator sees: `geode ns ls` gives the namespace's replica count.
    const ls = await runCliCaptured(["ns", "ls", "--json"], { ...process.env, NATS_URL: cluster.url });
    expect(ls.code, ls.err).toBe(0);
    const row = (JSON.parse(ls.out) as Array<{ ns: string; replicas: number[] }>).find((r) => r.ns === ns);
    expect(row?.replicas).toEqual([3]);
  });

  it("five replicas on three nodes: the service stops with the count and the cluster size", async () => {
    const p = spawnService("services/tool-executor/src/main.ts", childEnv("5"));
    expect(await p.exited).toBe(2);
    expect(p.output()).toContain(
      'tool-executor: GEODE_STREAM_REPLICAS=5 cannot be placed: the NATS cluster "geode" has 3 nodes',
    );
  });

  it("upgrading an R1 deployment: raising the streams raises the consumers at the next start", async () => {
    const n = buildNames(uniqueNamespace("u"));
    await ensureEventStreams(nc, n, { replicas: 1 });
    await ensureBucket(nc, n, "toolReceipts", { replicas: 1 });
    const consumer = { durable_name: "activity-recorder", ack_policy: AckPolicy.Explicit };
    // A component configured for 3 on a stream still at 1: the consumer cannot outnumber it.
    expect(
      (await ensureDurableConsumer(jsm, n.eventsStream, consumer, { replicas: 3 })).config.num_replicas,
    ).toBe(1);
    // The documented upgrade: edit each stream's replicas (nats stream edit … --replicas 3).
    for (const s of [n.eventsStream, n.timelineStream, `KV_${n.buckets.toolReceipts}`])
      await jsm.streams.update(s, { num_replicas: 3 });
    const raised = {
      [n.eventsStream]: 3,
      [n.timelineStream]: 3,
      [`KV_${n.buckets.toolReceipts}`]: 3,
    };
    // The stream list is answered by the cluster while the new peers catch up: poll it.
    await waitFor(async () => isDeepStrictEqual(await replicasOf(jsm, n.ns), raised), 20_000, 200).catch(
      () => undefined,
    );
    expect(await replicasOf(jsm, n.ns)).toEqual(raised);
    expect(
      (await ensureDurableConsumer(jsm, n.eventsStream, consumer, { replicas: 3 })).config.num_replicas,
    ).toBe(3);
  });
});
