import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { claimDataFolder, type EmbeddedOwner, OWNER_FILE } from "./embedded-owner.js";
import { openProjectionDb } from "./projection-db.js";

/** A pid of a process that has ended. */
async function deadPid(): Promise<number> {
  const child = spawn("true");
  await new Promise((r) => child.once("exit", r));
  return child.pid!;
}

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const owner = (o: Partial<EmbeddedOwner>): string =>
  JSON.stringify({ pid: 1, command: "geode up", url: "", started_at: 0, token: "t", ...o });

describe("the embedded database's owner file", () => {
  const root = mkdtempSync(path.join(tmpdir(), "geode-owner-unit-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("O_EXCL: of many claims at once, exactly one owns the folder", async () => {
    const dir = path.join(root, "race");
    mkdirSync(dir);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => claimDataFolder(dir, `c${i}`)));
    const claims = results.flatMap((r) => ("claim" in r ? [r.claim] : []));
    expect(claims).toHaveLength(1);
    for (const r of results) if ("owner" in r) expect(r.owner.token).toBe(claims[0]!.record.token);
    claims[0]!.release();
    expect(existsSync(path.join(dir, OWNER_FILE))).toBe(false);
  });

  it("takes over the file of an owner that is gone, serves, and frees the folder on close", {
    timeout: 240_000,
  }, async () => {
    const dir = path.join(root, "stale");
    mkdirSync(dir);
    writeFileSync(
      path.join(dir, OWNER_FILE),
      owner({ pid: await deadPid(), url: "postgres://127.0.0.1:1/x" }),
    );
    const p = await openProjectionDb({ ns: "owner_unit", pgliteDir: dir, command: "unit test" });
    try {
      const now = JSON.parse(readFileSync(path.join(dir, OWNER_FILE), "utf8")) as EmbeddedOwner;
      expect(now).toMatchObject({ pid: process.pid, command: "unit test" });
      expect(now.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
      expect(await p.db.selectFrom("activity_events").selectAll().execute()).toEqual([]);
    } finally {
      await p.close();
    }
    expect(existsSync(path.join(dir, OWNER_FILE))).toBe(false);
  });

  it("refuses with one line naming the owner when the owner is alive but does not answer", async () => {
    const dir = path.join(root, "unreachable");
    mkdirSync(dir);
    const sleeper = spawn("sleep", ["60"]);
    try {
      const port = await closedPort();
      const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
      writeFileSync(path.join(dir, OWNER_FILE), owner({ pid: sleeper.pid!, url }));
      await expect(openProjectionDb({ ns: "owner_unit", pgliteDir: dir })).rejects.toThrow(
        `the embedded database ${dir} is owned by pid ${sleeper.pid} (geode up), which does not answer at ${url}: ` +
          `connect ECONNREFUSED 127.0.0.1:${port}; stop that process, or remove ${path.join(dir, OWNER_FILE)} if it is not a GEODE process`,
      );
      // Its file is left alone.
      expect(JSON.parse(readFileSync(path.join(dir, OWNER_FILE), "utf8")).pid).toBe(sleeper.pid);
    } finally {
      sleeper.kill("SIGKILL");
    }
  });
});
