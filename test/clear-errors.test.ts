import net from "node:net";
import { freePort } from "@geode/local-server";
import { GEODE_BIN, spawnService } from "@geode/testing";
import { describe, expect, it } from "vitest";

const CLI = GEODE_BIN; // the compiled `geode` command, as users run it
const SECRET = "s3cret-pw";

/** Runs `entry` (the CLI or a service) to its end; its whole output and exit code. */
async function run(entry: string, env: Record<string, string>, args: string[] = []) {
  const proc = spawnService(entry, { LOG_LEVEL: "info", GEODE_NAMESPACE: "clear_errors", ...env }, args);
  const code = await proc.exited;
  return { code, out: proc.output() };
}

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  const port = await freePort();
  await new Promise<void>((resolve) => {
    const s = net.connect({ port, host: "127.0.0.1" });
    s.once("error", () => resolve());
    s.once("connect", () => {
      s.destroy();
      resolve();
    });
  });
  return port;
}

function expectClear(r: { code: number | null; out: string }, url: RegExp, maxLines = 2) {
  expect(r.code, r.out).not.toBe(0);
  expect(r.code, r.out).not.toBeNull();
  const lines = r.out.trimEnd().split("\n");
  expect(lines.length, r.out).toBeLessThanOrEqual(maxLines);
  expect(r.out).toMatch(url);
  expect(r.out).not.toContain(SECRET);
  expect(r.out).not.toMatch(/^\s+at /m); // no stack
}

describe("a NATS_URL or DATABASE_URL that does not work", () => {
  it("every NATS command: one line naming the URL (password masked) and what failed, one what to do", async () => {
    const port = await closedPort();
    const env = { NATS_URL: `nats://geode:${SECRET}@127.0.0.1:${port}` };
    const commands = [
      ["health"],
      ["events", "tail"],
      ["handlers", "ls"],
      ["receipts", "ls"],
      ["agents", "ls"],
    ];
    const results = await Promise.all(commands.map((args) => run(CLI, env, args)));
    for (const [i, r] of results.entries()) {
      expectClear(
        r,
        new RegExp(
          `^geode ${commands[i]!.join(" ")}: cannot connect to NATS at nats://geode:\\*\\*\\*@127\\.0\\.0\\.1:${port}: connection refused\\n  Start a nats-server`,
        ),
      );
    }
  }, 120_000);

  it("geode demo honours a NATS_URL that is set: it says it does not answer, and starts no server of its own", async () => {
    const port = await closedPort();
    const r = await run(CLI, { NATS_URL: `nats://geode:${SECRET}@127.0.0.1:${port}` }, ["demo"]);
    expectClear(
      r,
      new RegExp(
        `^geode demo: cannot connect to NATS at nats://geode:\\*\\*\\*@127\\.0\\.0\\.1:${port}: connection refused`,
      ),
    );
    expect(r.out).not.toMatch(/started nats-server/);
  }, 60_000);

  it("a NATS_URL that is not an address, or a DATABASE_URL that is not postgres://, is refused as configuration", async () => {
    const [nats, db] = await Promise.all([
      run(CLI, { NATS_URL: `nats://geode:${SECRET}@bad host:x` }, ["health"]),
      run(CLI, { DATABASE_URL: `mysql://geode:${SECRET}@127.0.0.1/x` }, ["prune"]),
    ]);
    expectClear(
      nats,
      /NATS_URL must be nats:\/\/host:port \(several comma-separated\), got "nats:\/\/geode:\*\*\*@bad host:x"/,
      1,
    );
    expectClear(db, /DATABASE_URL must be postgres:\/\/user:password@host:port\/database/, 1);
  }, 60_000);

  it("an unreachable PostgreSQL: the URL without its password, what failed, what to do", async () => {
    const port = await closedPort();
    const r = await run(CLI, { DATABASE_URL: `postgres://geode:${SECRET}@127.0.0.1:${port}/x` }, ["prune"]);
    expectClear(
      r,
      new RegExp(
        `^geode prune: PostgreSQL at postgres://geode:\\*\\*\\*@127\\.0\\.0\\.1:${port}/x is not reachable: .*ECONNREFUSED.*\\n  Start PostgreSQL there`,
      ),
    );
  }, 60_000);

  it("a service that cannot reach NATS: one fatal log line with the masked URL and a hint, exit 1", async () => {
    const port = await closedPort();
    const r = await run("services/hook-dispatcher/src/main.ts", {
      NATS_URL: `nats://geode:${SECRET}@127.0.0.1:${port}`,
    });
    expectClear(r, /cannot connect to NATS at nats:\/\/geode:\*\*\*@127\.0\.0\.1:\d+: connection refused/, 1);
    const line = JSON.parse(r.out.trim()) as Record<string, unknown>;
    expect(line).toMatchObject({
      level: 60,
      service: "hook-dispatcher",
      hint: expect.stringMatching(/NATS_URL/),
    });
    expect(line).not.toHaveProperty("err");
  }, 60_000);
});
