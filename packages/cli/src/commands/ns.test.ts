import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensureBucket, ensureEventStreams, ensureResultStore, RuntimeEventBus } from "@geode/bus";
import { names as buildNames } from "@geode/contracts";
import {
  decodeStreamMessage,
  openProjectionDb,
  type ProjectionDb,
  projectionNamespaces,
  writeBatch,
} from "@geode/projection";
import { serveHealth } from "@geode/service";
import { useTestEnv } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliCaptured } from "../capture-io.js";
import { natsNamespaces } from "../namespaces/namespace-inventory.js";

const env = useTestEnv();
const runsDir = mkdtempSync(path.join(tmpdir(), "geode-ns-"));
let db: ProjectionDb;
/** A namespace whose stream names start like this file's: it must survive the removal. */
let sibling: string;

const geode = (args: string[]) => runCliCaptured(args, { ...env().env, GEODE_RUNS_DIR: runsDir });

beforeAll(async () => {
  const { nc, names, ns, databaseUrl } = env();
  sibling = `${ns}_x`;
  await ensureEventStreams(nc, names);
  await ensureEventStreams(nc, buildNames(sibling));
  for (const bucket of ["hookHandlers", "toolReceipts", "runs"] as const)
    await ensureBucket(nc, names, bucket);
  await ensureResultStore(nc, names);
  db = await openProjectionDb({ ns, databaseUrl });
  // One event of run r-1 in the projection, and its run folder.
  const bus = await RuntimeEventBus.create({ nc, names, source: "ns-test" });
  const envelope = bus.envelope("turn_completed", {}, { session_id: "s-1", run_id: "r-1" });
  const row = decodeStreamMessage("events", 1, new TextEncoder().encode(JSON.stringify(envelope)));
  if (row.type !== "event") throw new Error(`not projected: ${JSON.stringify(row)}`);
  await writeBatch(db.db, {
    consumer: "ns-test",
    stream: names.eventsStream,
    lastSeq: 1,
    activity: [row.activity],
  });
  mkdirSync(path.join(runsDir, "r-1"));
  writeFileSync(path.join(runsDir, "r-1", "events.jsonl"), "{}\n");
});

afterAll(async () => {
  await db?.close();
  const jsm = env().jsm;
  for (const s of [`${sibling.toUpperCase()}_EVENTS`, `${sibling.toUpperCase()}_TIMELINE`])
    await jsm.streams.delete(s).catch(() => undefined);
  rmSync(runsDir, { recursive: true, force: true });
});

describe("geode ns", () => {
  it("ls lists each namespace with its streams, buckets, messages, bytes and projection rows", async () => {
    const json = await geode(["ns", "ls", "--json"]);
    expect(json.code, json.err).toBe(0);
    const rows = JSON.parse(json.out) as Array<Record<string, unknown>>;
    const mine = rows.find((r) => r["ns"] === env().ns);
    expect(mine).toMatchObject({
      streams: [env().names.eventsStream, env().names.timelineStream].sort(),
      replicas: [1],
      activityRows: 1,
    });
    expect(((mine?.["buckets"] ?? []) as string[]).sort()).toEqual([
      ...["hook_handlers", "runs", "tool_receipts"].map((b) => `KV_${env().ns}_${b}`),
      `OBJ_${env().ns}_results`,
    ]);
    const other = rows.find((r) => r["ns"] === sibling);
    expect(other?.["streams"]).toHaveLength(2);
    expect(other?.["activityRows"]).toBeUndefined();
    const table = await geode(["ns", "ls"]);
    expect(table.out).toMatch(
      /^namespace\s+streams\s+buckets\s+replicas\s+messages\s+bytes\s+postgres rows$/m,
    );
    expect(table.out).toMatch(new RegExp(`^${env().ns}\\s+2\\s+4\\s+1\\s+\\d+\\s+\\S+ \\S+\\s+1$`, "m"));
  });

  it("rm without --yes says what it would delete and deletes nothing", async () => {
    const r = await geode(["ns", "rm", env().ns]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`stream    ${env().names.eventsStream}`);
    expect(r.err).toContain(`bucket    KV_${env().ns}_runs`);
    expect(r.err).toContain(`bucket    OBJ_${env().ns}_results`);
    expect(r.err).toContain(`postgres  schema ${env().ns}`);
    expect(r.err).toMatch(/run files .*r-1/);
    expect(r.err).toMatch(/--yes/);
    expect((await natsNamespaces(env().nc)).has(env().ns)).toBe(true);
  });

  it("rm refuses a namespace whose services answer health", async () => {
    const live = serveHealth(env().nc, env().names, "verifier");
    await env().nc.flush();
    try {
      const r = await geode(["ns", "rm", env().ns, "--yes"]);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/is in use \(verifier answer health\)/);
    } finally {
      await live.drain();
    }
  });

  it("rm --yes deletes its streams, buckets, schema and run files, and nothing of a namespace sharing its prefix", async () => {
    const r = await geode(["ns", "rm", env().ns, "--yes"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`removed namespace ${env().ns}`);
    const left = await natsNamespaces(env().nc);
    expect(left.has(env().ns)).toBe(false);
    expect(left.get(sibling)?.streams).toHaveLength(2);
    expect((await projectionNamespaces(db.root)).has(env().ns)).toBe(false);
    expect(existsSync(path.join(runsDir, "r-1"))).toBe(false);
    expect((await geode(["ns", "rm", env().ns, "--yes"])).code).toBe(1); // nothing left
  });
});
