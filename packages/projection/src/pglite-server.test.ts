import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PgliteServer, servePglite } from "./pglite-server.js";

describe("servePglite: one PGlite backend, many wire-protocol connections", () => {
  let lite: PGlite;
  let server: PgliteServer;
  let pool: pg.Pool;

  beforeAll(async () => {
    lite = await PGlite.create();
    server = await servePglite(lite);
    pool = new pg.Pool({ connectionString: server.url, max: 8 });
    await pool.query("create table t (id int primary key, v text)");
  }, 180_000);
  afterAll(async () => {
    await pool?.end();
    await server?.close();
    await lite?.close();
  });

  it("serves on loopback", () => {
    expect(server.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
  });

  it("never interleaves concurrent extended-protocol queries or transactions of different connections", async () => {
    await Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        for (let i = 0; i < 30; i++) {
          const r = await pool.query("select $1::int + $2::int as x, $3::text as s", [w, i, `w${w}`]);
          expect(r.rows[0]).toEqual({ x: w + i, s: `w${w}` });
          const c = await pool.connect();
          try {
            await c.query("begin");
            await c.query("insert into t values ($1, $2)", [w * 1000 + i, `w${w}`]);
            const seen = await c.query("select count(*)::int as n from t where v = $1", [`w${w}`]);
            // Its own uncommitted row is visible to itself; others' half-done work never leaks in.
            expect(seen.rows[0].n).toBe(Math.ceil(i / 2) + 1);
            await c.query(i % 2 === 0 ? "commit" : "rollback");
          } finally {
            c.release();
          }
        }
      }),
    );
    expect((await pool.query("select count(*)::int as n from t")).rows[0].n).toBe(6 * 15);
  });

  it("rolls back what a connection that vanished left open, and keeps serving the others", async () => {
    const c = new pg.Client({ connectionString: server.url });
    c.on("error", () => undefined);
    await c.connect();
    await c.query("begin");
    await c.query("insert into t values (99999, 'left open')");
    (c as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    const r = await pool.query("select count(*)::int as n from t where id = 99999");
    expect(r.rows[0].n).toBe(0);
  });

  it("an error inside one connection's statement is that connection's alone", async () => {
    await expect(pool.query("select $1::int / 0", [1])).rejects.toThrow(/division by zero/);
    expect((await pool.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
  });

  it("a client that ends cleanly (Terminate) frees the backend for the next", async () => {
    for (let i = 0; i < 3; i++) {
      const c = new pg.Client({ connectionString: server.url, connectionTimeoutMillis: 5_000 });
      await c.connect();
      expect((await c.query("select $1::int as i", [i])).rows).toEqual([{ i }]);
      await c.end();
    }
  });
});
