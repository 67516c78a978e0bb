/**
 * `GET /api/audit` against real NATS, Postgres and the notary service (a child process): each
 * log's latest checkpoint (size, age, key name), a message deleted from the stream shown as a gap
 * with its range, the notary down, the notary behind (its health answered by a NATS subscription
 * once the real one stopped, as a notary that stopped signing would), and a 503 naming the
 * database when Postgres cannot be reached.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { writeAuditKeyFile } from "@geode/audit";
import { type RunningConsole, startConsole } from "@geode/console";
import { type ConsoleAudit, ConsoleAuditSchema } from "@geode/contracts";
import { freePort } from "@geode/local-server";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { type SpawnedProcess, spawnService, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_TOKEN } from "./console-support.js";

const env = useTestEnv();
const dir = mkdtempSync(path.join(tmpdir(), "geode-console-audit-"));
const keyFile = path.join(dir, "audit.key");
let db: ProjectionDb;
let console_: RunningConsole;
let notary: SpawnedProcess | undefined;
let published = 0;

beforeAll(async () => {
  writeAuditKeyFile(keyFile, "console-audit");
  db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl, migrate: false });
  console_ = await startConsole({
    conn: { nc: env().nc, names: env().names },
    token: CONSOLE_TOKEN,
    port: 0,
    projection: { db: db.db, ns: db.ns },
  });
});
afterAll(async () => {
  await notary?.stop("SIGKILL");
  await console_?.close();
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function startNotaryService(): Promise<SpawnedProcess> {
  const child = spawnService("services/notary/src/main.ts", {
    ...env().env,
    GEODE_AUDIT_KEY_FILE: keyFile,
    GEODE_AUDIT_CHECKPOINT_MS: "200",
    GEODE_AUDIT_LEASE_MS: "1500",
    GEODE_METRICS_PORT: String(await freePort()),
    LOG_LEVEL: "info",
  });
  await child.waitForOutput(/notary started/);
  return child;
}

/** `count` events published straight to JetStream; resolves with their stream sequences. */
async function publishEvents(count: number): Promise<number[]> {
  const { js, names } = env();
  const acks = await Promise.all(
    Array.from({ length: count }, () => {
      published++;
      return js.publish(names.event("turn_completed"), JSON.stringify({ i: published }), {
        msgID: `audit-console-${published}`,
      });
    }),
  );
  return acks.map((a) => a.seq);
}

async function audit(url = console_.url): Promise<ConsoleAudit> {
  const res = await fetch(`${url}/api/audit`, { headers: { authorization: `Bearer ${CONSOLE_TOKEN}` } });
  expect(res.status).toBe(200);
  return ConsoleAuditSchema.parse(await res.json());
}

const events = (a: ConsoleAudit) => a.logs.find((l) => l.log === "events")!;

describe("GET /api/audit", () => {
  it("says the notary is down before one ever ran, with both logs empty", async () => {
    const a = await audit();
    expect(a.notary).toBe("down");
    expect(a.checkpoint_ms).toBeNull();
    expect(a.logs.map((l) => [l.log, l.origin, l.size, l.checkpoint, l.gaps])).toEqual([
      ["events", `geode/${env().ns}/events`, 0, null, 0],
      ["timeline", `geode/${env().ns}/timeline`, 0, null, 0],
    ]);
    // Never having run is not a gap or a lag: no banner, the table says down.
    expect(a.alerts).toEqual([]);
  });

  it("shows each log's latest checkpoint: size, age, key name, signed_at; no alert", {
    timeout: 60_000,
  }, async () => {
    notary = await startNotaryService();
    const before = Date.now();
    const seqs = await publishEvents(25);
    await waitFor(async () => events(await audit()).checkpoint?.size === seqs.length, 30_000, 100);
    const a = await audit();
    expect(a.notary).toBe("active");
    expect(a.checkpoint_ms).toBe(200);
    const e = events(a);
    expect(e).toMatchObject({
      stream: env().names.eventsStream,
      size: 25,
      last_seq: seqs.at(-1),
      stream_last_seq: seqs.at(-1),
      gaps: 0,
      last_gap: null,
      behind: false,
    });
    expect(e.checkpoint).toMatchObject({ size: 25, key_name: "console-audit" });
    expect(e.checkpoint!.signed_at).toBeGreaterThanOrEqual(before);
    expect(e.checkpoint!.age_ms).toBeGreaterThanOrEqual(0);
    expect(e.checkpoint!.root_hash).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(a.alerts).toEqual([]);
  });

  it("names a message deleted from the stream as a gap with its range", { timeout: 60_000 }, async () => {
    const { jsm, names } = env();
    const seqs = await publishEvents(5);
    await waitFor(async () => events(await audit()).size === 30, 30_000, 100);
    // Deleted before the notary reaches it: publish behind a message the notary has not read yet.
    await notary!.stop("SIGTERM");
    notary = undefined;
    const more = await publishEvents(4);
    expect(await jsm.streams.deleteMessage(names.eventsStream, more[1]!)).toBe(true);
    expect(await jsm.streams.deleteMessage(names.eventsStream, more[2]!)).toBe(true);
    notary = await startNotaryService();
    // Until the restarted notary has signed what it appended: before that, its last checkpoint is
    // the stopped one's, older than 3 × the interval while the stream grew ("behind", rightly).
    await waitFor(
      async () => {
        const e = events(await audit());
        return e.gaps === 2 && e.checkpoint?.size === e.size && !e.behind;
      },
      30_000,
      100,
    );
    const a = await audit();
    expect(events(a).last_gap).toEqual({ from_seq: more[1], to_seq: more[2] });
    expect(events(a).size).toBe(seqs.length + 25 + 4);
    expect(a.alerts).toEqual([
      `Audit log events: 2 stream messages are gone (deleted), latest sequences ${more[1]}..${more[2]}. The record is not whole; \`geode audit verify\` names each.`,
    ]);
  });

  it("says the notary is behind when its checkpoint is older than 3 × the interval while the stream grew", {
    timeout: 90_000,
  }, async () => {
    const { nc, names } = env();
    await notary!.stop("SIGTERM");
    notary = undefined;
    await waitFor(async () => (await audit()).notary === "down", 20_000, 100);
    const signed = events(await audit()).checkpoint!;
    // A notary that answers health but no longer signs.
    const sub = nc.subscribe(names.health("notary"), {
      callback: (_e, m) => {
        m.respond(
          JSON.stringify({
            service: "notary",
            status: "ok",
            version: "0.0.0",
            started_at: Date.now(),
            audit: { active: true, checkpoint_ms: 200, logs: [] },
          }),
        );
      },
    });
    try {
      const more = await publishEvents(3);
      await waitFor(async () => events(await audit()).behind, 20_000, 100);
      const a = await audit();
      expect(a.notary).toBe("active");
      expect(events(a)).toMatchObject({ behind: true, stream_last_seq: more.at(-1) });
      expect(events(a).checkpoint!.size).toBe(signed.size);
      expect(events(a).checkpoint!.age_ms).toBeGreaterThan(600);
      expect(a.logs.find((l) => l.log === "timeline")!.behind).toBe(false);
      expect(a.alerts).toContainEqual(
        expect.stringMatching(/^Audit log events: the notary is behind: its latest checkpoint is \d+ s old/),
      );
    } finally {
      sub.unsubscribe();
    }
    // With no notary answering, judged by the default interval (5,000 ms).
    await waitFor(async () => (await audit()).notary === "down", 20_000, 100);
    await waitFor(async () => events(await audit()).checkpoint!.age_ms > 15_000, 30_000, 200);
    const down = await audit();
    expect(down.checkpoint_ms).toBeNull();
    expect(events(down).behind).toBe(true);
    expect(down.alerts).toContainEqual(
      expect.stringMatching(
        /^Audit log events: the notary is not answering: its latest checkpoint is \d+ s old \(over 3 × 5000 ms\)/,
      ),
    );
  });

  it("answers 503 naming the database when Postgres cannot be reached", async () => {
    const gone = await openProjectionDb({
      ns: env().ns,
      databaseUrl: `postgres://postgres@127.0.0.1:${await freePort()}/test`,
      migrate: false,
    });
    const c = await startConsole({
      conn: { nc: env().nc, names: env().names },
      token: CONSOLE_TOKEN,
      port: 0,
      projection: { db: gone.db, ns: gone.ns },
    });
    try {
      const res = await fetch(`${c.url}/api/audit`, {
        headers: { authorization: `Bearer ${CONSOLE_TOKEN}` },
      });
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({
        error: {
          code: "unavailable",
          message: expect.stringContaining("the audit tables could not be read: their database (Postgres"),
        },
      });
      expect((await audit()).logs).toHaveLength(2);
    } finally {
      await c.close();
      await gone.close();
    }
  });

  it("answers 401 without the token", async () => {
    const res = await fetch(`${console_.url}/api/audit`);
    expect(res.status).toBe(401);
  });
});
