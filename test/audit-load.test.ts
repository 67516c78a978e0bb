/**
 * A load run verifies clean: a few thousand Claude Code hook calls through the agent gateway, many
 * sessions at once, a guard blocking some of them, while the activity-recorder projects and the
 * notary appends and signs; then `geode audit verify --projection` passes on both logs, every
 * message of both streams in the trees and under a signed checkpoint.
 */
import { useTestEnv } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ConsolePlane,
  claudeCodeSession,
  serveDiskGuard,
  startConsolePlane,
} from "./console-support.js";
import { startTestNotary, type TestNotary } from "./notary-support.js";

/** Sessions of five or six hook calls each (sized for a loaded two-core machine). */
const SESSIONS = 400;
/** Sessions in flight at once. */
const PARALLEL = 16;

const env = useTestEnv();
let plane: ConsolePlane;
let notary: TestNotary;

beforeAll(async () => {
  plane = await startConsolePlane(env());
  await serveDiskGuard(plane);
  notary = await startTestNotary(env(), { checkpointMs: 500 });
}, 60_000);

afterAll(async () => {
  await notary?.stop();
  await plane?.stop();
});

describe("a load run of the plane", () => {
  it("verifies clean after thousands of concurrent hook calls, the projection included", {
    timeout: 180_000,
  }, async () => {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        for (let i = next++; i < SESSIONS; i = next++)
          await claudeCodeSession(plane, `load-${i}`, {
            prompt: `task ${i}`,
            blocked: i % 5 === 0,
            end: true,
          });
      }),
    );
    const hookCalls = SESSIONS * 5 + SESSIONS / 5;
    const seconds = (performance.now() - t0) / 1000;
    const logs = await notary.expectVerifiesClean({ projection: true, timeoutMs: 120_000 });
    const [events, timeline] = logs;
    console.info(
      `audit load: ${hookCalls} hook calls in ${seconds.toFixed(1)} s; verified ${events?.leaves} events, ${timeline?.leaves} timeline entries`,
    );
    // Every stream message of the run is a leaf: at least one event per hook call.
    const { messages } = (await env().jsm.streams.info(env().names.eventsStream)).state;
    expect(events?.leaves).toBe(messages);
    expect(messages).toBeGreaterThanOrEqual(hookCalls);
    expect(timeline?.leaves).toBeGreaterThanOrEqual(SESSIONS * 2);
  });
});
