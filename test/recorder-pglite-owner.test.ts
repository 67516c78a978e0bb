import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { amcheck } from "@electric-sql/pglite/contrib/amcheck";
import { RuntimeEventBus } from "@geode/bus";
import { OWNER_FILE, openProjectionDb, serveEmbeddedDatabase } from "@geode/projection";
import { GEODE_BIN, type SpawnedProcess, spawnService, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";
import { projectionSnapshot } from "./recorder-support.js";

const CLI = GEODE_BIN; // the compiled `geode` command, as users run it
const EVENTS = 300;

describe("the embedded PGlite has one owner: geode up serves it, the CLI goes through it", () => {
  const env = useTestEnv();
  const cwd = mkdtempSync(path.join(tmpdir(), "geode-owner-"));
  const dataDir = path.join(cwd, ".geode/pgdata");
  const running: SpawnedProcess[] = [];
  afterAll(async () => {
    for (const p of running) await p.stop("SIGKILL");
    rmSync(cwd, { recursive: true, force: true });
  });

  it("geode replay --rebuild while geode up runs goes through the owner; the data stays intact; a second opener is refused", {
    timeout: 300_000,
  }, async () => {
    // DATABASE_URL empty: the embedded database in {cwd}/.geode/pgdata.
    const childEnv = {
      ...env().env,
      DATABASE_URL: "",
      GEODE_RUNS_DIR: path.join(cwd, "runs"),
      LOG_LEVEL: "warn",
    };
    const up = spawnService(CLI, childEnv, ["up", "--only", "activity-recorder"], { cwd });
    running.push(up);
    await up.waitForOutput(/geode up: ready/, 240_000);
    expect(up.output()).toMatch(
      /database embedded PGlite \(\.geode\/pgdata\) served at postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres/,
    );

    const bus = await RuntimeEventBus.create({ nc: env().nc, names: env().names, source: "owner-test" });
    for (let i = 0; i < EVENTS; i++) void bus.emit("turn_completed", { i }, { session_id: "s-owner" });
    void bus.emit("extension_invoked", {
      surface: "hook",
      name: "Stop",
      extension: "h",
      status: "ok",
      reason: "",
      duration_ms: 1,
    });
    void bus.timeline("session.started", { model: "m" }, { session_id: "s-owner" });
    await bus.flush();

    // This process is a client too: it reaches the data through geode up.
    const client = await openProjectionDb({
      ns: env().ns,
      pgliteDir: dataDir,
      migrate: false,
      command: "test",
    });
    let before: Awaited<ReturnType<typeof projectionSnapshot>>;
    try {
      await waitFor(
        async () => {
          const s = await projectionSnapshot(client).catch(() => undefined);
          return s?.activity.length === EVENTS + 1 && s.session.length === 1 && s.extension.length === 1;
        },
        60_000,
        200,
      );
      before = await projectionSnapshot(client);

      const replay = spawnService(CLI, childEnv, ["replay", "--rebuild"], { cwd });
      running.push(replay);
      expect(await replay.exited, replay.output()).toBe(0);
      expect(replay.output()).toContain("replay done");
      expect(replay.output()).toMatch(/_EVENTS: seq 1\.\.301, 301 messages, 301 rows inserted/);
      expect(await projectionSnapshot(client)).toEqual(before);
    } finally {
      await client.close();
    }

    // A second process that wants the folder for itself is refused with one line naming the owner.
    const second = spawnService(CLI, childEnv, ["up", "--only", "activity-recorder"], { cwd });
    running.push(second);
    expect(await second.exited).toBe(1);
    const refusal = `the embedded database .geode/pgdata is already open in pid ${up.child.pid} (geode up)`;
    expect(second.output()).toMatch(
      new RegExp(
        `^geode up: ${refusal.replace(/[().]/g, "\\$&")} at postgres://\\S+; stop that process first, or set DATABASE_URL\\n$`,
        "m",
      ),
    );
    expect(second.output()).not.toMatch(/\n\s+at /);
    await expect(serveEmbeddedDatabase({ dir: dataDir, command: "test" })).rejects.toThrow(
      `the embedded database ${dataDir} is already open in pid ${up.child.pid} (geode up)`,
    );

    up.child.kill("SIGINT");
    expect(await up.exited).toBe(0);
    expect(existsSync(path.join(dataDir, OWNER_FILE))).toBe(false);

    // A fresh start reads the same rows, and every index of the schema checks out.
    const fresh = await openProjectionDb({
      ns: env().ns,
      pgliteDir: dataDir,
      migrate: false,
      command: "test",
    });
    try {
      expect(await projectionSnapshot(fresh)).toEqual(before);
    } finally {
      await fresh.close();
    }
    const lite = await PGlite.create(dataDir, { extensions: { amcheck } });
    try {
      await lite.exec("create extension if not exists amcheck");
      const checked = await lite.query<{ n: number }>(
        `select count(bt_index_check(c.oid, true))::int as n from pg_index i
           join pg_class c on c.oid = i.indexrelid
           join pg_namespace s on s.oid = c.relnamespace
          where s.nspname = $1`,
        [env().ns],
      );
      expect(checked.rows[0]?.n).toBeGreaterThanOrEqual(4);
    } finally {
      await lite.close();
    }
  });
});
