import { requestJson } from "@geode/bus";
import { HookName } from "@geode/contracts";
import { createHookClient } from "@geode/runtime";
import { serveHook } from "@geode/sdk";
import { type SpawnedProcess, spawnService, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";

const env = useTestEnv();
let proc: SpawnedProcess | undefined;

afterAll(async () => {
  await proc?.stop("SIGKILL");
});

describe("hook-dispatcher as a process", () => {
  it("answers health and invocations, then drains on SIGTERM", async () => {
    const { nc, names } = env();
    proc = spawnService("services/hook-dispatcher/src/main.ts", { ...env().env, LOG_LEVEL: "info" });
    await proc.waitForOutput(/hook-dispatcher started/);

    const health = (await requestJson(
      nc,
      names.health("hook-dispatcher"),
      {},
      { timeoutMs: 5_000 },
    )) as Record<string, unknown>;
    expect(health).toMatchObject({ service: "hook-dispatcher", status: "ok" });
    expect(typeof health["started_at"]).toBe("number");

    const handler = await serveHook({ nc, names }, HookName.UserPromptSubmit, { name: "upper" }, (e) => ({
      action: "rewrite",
      updates: { user_input: String(e.payload["user_input"]).toUpperCase() },
    }));
    const hooks = createHookClient(nc, names);
    // The process learns about the registration through its KV watch.
    let out: Awaited<ReturnType<typeof hooks.invoke>> | undefined;
    await waitFor(async () => {
      out = await hooks.invoke(HookName.UserPromptSubmit, { user_input: "hi" });
      return out.decision_sources.length > 0;
    });
    expect(out?.payload).toEqual({ user_input: "HI" });
    await handler.close();

    expect(await proc.stop("SIGTERM")).toBe(0);
    expect(proc.output()).toMatch(/hook-dispatcher stopped/);
    const after = await requestJson(nc, names.health("hook-dispatcher"), {}, { timeoutMs: 1_000 }).catch(
      (e: unknown) => e,
    );
    expect((after as { code?: string }).code).toBe("unavailable");
  });
});
