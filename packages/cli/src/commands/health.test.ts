import { serveHealth } from "@geode/service";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { runCliCaptured } from "../capture-io.js";

const env = useTestEnv();

const geode = (args: string[], extraEnv: Record<string, string> = {}) =>
  runCliCaptured(args, { ...env().env, ...extraEnv });

describe("geode health", () => {
  it("exits 0 when every named service answers ok, 1 when one does not answer", async () => {
    const responder = serveHealth(env().nc, env().names, "verifier", undefined, {
      metricsUrl: "http://127.0.0.1:9466/metrics",
    });
    await env().nc.flush();
    try {
      const ok = await geode(["health", "verifier", "--json"]);
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.out)).toEqual([
        {
          service: "verifier",
          status: "ok",
          version: expect.any(String),
          started_at: expect.any(Number),
          metrics_url: "http://127.0.0.1:9466/metrics",
        },
      ]);

      const missing = await geode(["health", "verifier", "tool-executor", "--timeout", "500"]);
      expect(missing.code).toBe(1);
      expect(missing.out).toMatch(/^verifier\s+ok\s+\S+\s+http:\/\/127\.0\.0\.1:9466\/metrics\s/m);
      expect(missing.out).toMatch(/^tool-executor\s+down\s+no responders/m);
    } finally {
      await responder.drain();
    }
  });

  it("exits 1 with a clear message when NATS is unreachable, 2 on a bad option", async () => {
    const down = await geode(["health"], { NATS_URL: "nats://127.0.0.1:1" });
    expect(down.code).toBe(1);
    expect(down.err).toMatch(
      /cannot connect to NATS at nats:\/\/127\.0\.0\.1:1: connection refused\n {2}Start a nats-server/,
    );
    expect((await geode(["health", "--timeout", "soon"])).code).toBe(2);
  });
});
