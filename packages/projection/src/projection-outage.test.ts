import { describe, expect, it } from "vitest";
import { backoffDelay, ProjectionOutage } from "./projection-outage.js";

function recorder() {
  const lines: Array<{ level: string; obj: object; msg: string }> = [];
  const log = {
    info: (obj: object, msg: string) => lines.push({ level: "info", obj, msg }),
    warn: (obj: object, msg: string) => lines.push({ level: "warn", obj, msg }),
    error: (obj: object, msg: string) => lines.push({ level: "error", obj, msg }),
  };
  return { lines, log };
}

describe("ProjectionOutage", () => {
  it("logs one line when writes start failing and one when they work again, however many fail", () => {
    let now = 1_000;
    const { lines, log } = recorder();
    const outage = new ProjectionOutage(log, () => now);
    expect(outage.health).toEqual({ status: "ok" });
    const refused = Object.assign(
      new AggregateError([new Error("connect ECONNREFUSED 127.0.0.1:5432")], ""),
      {
        code: "ECONNREFUSED",
      },
    );
    for (let i = 0; i < 50; i++) outage.failed(i % 3, refused, outage.attempt());
    expect(outage.health).toEqual({
      status: "degraded",
      reason: "projection database unavailable: connect ECONNREFUSED 127.0.0.1:5432",
    });
    now += 12_345;
    outage.succeeded(outage.attempt());
    outage.succeeded(outage.attempt());
    expect(outage.health).toEqual({ status: "ok" });
    expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
      "error projection unavailable; retrying with backoff",
      "info projection available again after 12.3 s (3 batches waited)",
    ]);
    expect(lines[1]!.obj).toEqual({ down_ms: 12_345, waited_batches: 3, failed_attempts: 50 });
  });

  it("a failure of an attempt older than the last success does not reopen the outage", () => {
    let now = 0;
    const { lines, log } = recorder();
    const outage = new ProjectionOutage(log, () => now);
    outage.failed(1, new Error("Connection terminated unexpectedly"));
    const slow = outage.attempt();
    now = 10;
    outage.succeeded(outage.attempt());
    now = 20;
    outage.failed(2, new Error("Connection terminated unexpectedly"), slow);
    expect(outage.health.status).toBe("ok");
    expect(lines).toHaveLength(2);
  });

  it("a success of an attempt older than the outage does not end it", () => {
    let now = 0;
    const { lines, log } = recorder();
    const outage = new ProjectionOutage(log, () => now);
    const inFlight = outage.attempt();
    now = 10;
    outage.failed(1, new Error("terminating connection due to administrator command"));
    now = 20;
    outage.succeeded(inFlight);
    expect(outage.health.status).toBe("degraded");
    now = 30;
    outage.failed(2, new Error("the database system is shutting down"), outage.attempt());
    now = 500;
    outage.succeeded(outage.attempt());
    expect(outage.health.status).toBe("ok");
    expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
      "error projection unavailable; retrying with backoff",
      "info projection available again after 0.5 s (2 batches waited)",
    ]);
  });

  it("backs off exponentially up to the cap, with jitter", () => {
    const policy = { initialMs: 100, maxMs: 2_000 };
    for (let attempt = 0; attempt < 40; attempt++) {
      const base = Math.min(2_000, 100 * 2 ** attempt);
      const d = backoffDelay(policy, attempt);
      expect(d).toBeGreaterThanOrEqual(base * 0.8 - 1);
      expect(d).toBeLessThanOrEqual(base * 1.2 + 1);
    }
  });
});
