import { HookName } from "@geode/contracts";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import { createHookClient } from "@geode/runtime";
import { type SpawnedProcess, spawnService, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";
import { startDispatcher } from "./hooks-support.js";

const env = useTestEnv();
const procs: SpawnedProcess[] = [];
let dispatcher: HookDispatcher | undefined;

afterAll(async () => {
  for (const p of procs) await p.stop("SIGTERM");
  await dispatcher?.stop();
});

describe("the example handlers", () => {
  it("serve decisions as documented, with the SDK and with a raw NATS client", async () => {
    dispatcher = await startDispatcher(env());
    for (const file of ["block-shell.ts", "raw-nats-handler.ts"]) {
      const p = spawnService(`examples/handlers/${file}`, env().env);
      procs.push(p);
      await p.waitForOutput(/serving/);
    }
    await waitFor(() => dispatcher?.handlers().length === 2);
    const hooks = createHookClient(env().nc, env().names);
    const blocked = await hooks.invoke(HookName.PreToolUse, {
      tool_name: "shell",
      arguments: { cmd: "rm -rf /" },
    });
    expect(blocked.blocked).toBe(true);
    expect(blocked.decisions).toEqual([
      { handler: "block-shell", action: "block", reason: "deleting files is not allowed here" },
    ]);
    const other = await hooks.invoke(HookName.PreToolUse, { tool_name: "fs.read", arguments: { path: "/" } });
    expect(other.decisions).toEqual([]);
    const terse = await hooks.invoke(HookName.UserPromptSubmit, { user_input: "please list files" });
    expect(terse.payload).toEqual({ user_input: "list files" });
    expect(terse.decision_sources).toEqual(["no-please"]);
    // Both unregister on SIGTERM.
    for (const p of procs.splice(0)) expect(await p.stop("SIGTERM")).toBe(0);
    await waitFor(() => dispatcher?.handlers().length === 0);
  });
});
