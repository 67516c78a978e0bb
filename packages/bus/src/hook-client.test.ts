import { correlation, ErrorCode, HookName } from "@geode/contracts";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { decodeJson, encodeJson } from "./codec.js";
import { createHookClient } from "./hook-client.js";

describe("the hook client while no dispatcher listens", () => {
  const env = useTestEnv();
  const payload = { tool_name: "echo", arguments: {} };

  it("sends the invocation again when a dispatcher appears within the grace, with the budget that is left", async () => {
    const { nc, names } = env();
    const dispatcher = await env().connect("late-dispatcher");
    const seen: number[] = [];
    // The dispatcher of a cluster node that went away reconnects 400 ms later.
    let subscription: ReturnType<typeof dispatcher.subscribe> | undefined;
    setTimeout(() => {
      subscription = dispatcher.subscribe(names.hookInvoke(HookName.PreToolUse), {
        queue: "hook-dispatcher",
        callback: (_err, m) => {
          const body = decodeJson(m.data) as { timeout_ms: number; correlation: object; payload: object };
          seen.push(body.timeout_ms);
          m.respond(
            encodeJson({
              schema_version: "geode.public-hook.v2",
              name: "PreToolUse",
              correlation: correlation(body.correlation),
              payload: body.payload,
              decisions: [],
              decision_sources: [],
              handler_errors: [],
              blocked: false,
            }),
          );
        },
      });
    }, 400);
    const started = Date.now();
    const outcome = await createHookClient(nc, names).invoke(
      HookName.PreToolUse,
      payload,
      {},
      { timeoutMs: 10_000 },
    );
    expect(outcome.blocked).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(seen).toHaveLength(1);
    // The dispatcher is told what is left of the caller's budget, not the whole of it again.
    expect(seen[0]).toBeLessThanOrEqual(10_000 - 400);
    expect(seen[0]).toBeGreaterThan(5_000);
    subscription?.unsubscribe();
    await dispatcher.flush();
  });

  it("is unavailable once nobody has answered for the grace, or at once past the caller's own budget", async () => {
    const { nc, names } = env();
    const hooks = createHookClient(nc, names);
    let started = Date.now();
    await expect(hooks.invoke(HookName.PreToolUse, payload, {}, { timeoutMs: 30_000 })).rejects.toMatchObject(
      {
        code: ErrorCode.Unavailable,
        message: "no responders",
      },
    );
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(2_000);
    expect(waited).toBeLessThan(10_000);

    started = Date.now();
    await expect(hooks.invoke(HookName.PreToolUse, payload, {}, { timeoutMs: 300 })).rejects.toMatchObject({
      code: ErrorCode.Unavailable,
    });
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
