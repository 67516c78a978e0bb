import { HandlerRegistrationSchema, HookName } from "@geode/contracts";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import { createHookClient } from "@geode/runtime";
import { type SpawnedProcess, spawnProgram, useTestEnv, waitFor } from "@geode/testing";
import { Kvm } from "@nats-io/kv";
import { afterAll, describe, expect, it } from "vitest";
import { startDispatcher } from "./hooks-support.js";

const env = useTestEnv();
let guard: SpawnedProcess | undefined;
let dispatcher: HookDispatcher | undefined;

afterAll(async () => {
  await guard?.stop("SIGTERM");
  await dispatcher?.stop();
});

describe("a handler in Python over the raw NATS protocol (examples/handlers/python)", () => {
  it("registers itself, heart-beats, answers PreToolUse through the dispatcher and unregisters", async () => {
    dispatcher = await startDispatcher(env());
    guard = spawnProgram("python3", ["examples/handlers/python/pretooluse_guard.py"], {
      ...env().env,
      GEODE_HANDLER_LEASE_MS: "1500",
    });
    await guard.waitForOutput(/py-guard serving/);
    await waitFor(() => dispatcher?.handlers().length === 1, 20_000);

    const kv = await new Kvm(env().nc).open(env().names.buckets.hookHandlers);
    const read = async () => HandlerRegistrationSchema.parse((await kv.get("PreToolUse.py-guard"))?.json());
    const first = await read();
    expect(first).toMatchObject({
      hook: "PreToolUse",
      name: "py-guard",
      priority: 20,
      timeout_ms: 2000,
      schema_version: "geode.public-hook.v2",
      failure_mode: "open",
      match: { tool_name: ["shell", "shell.*"] },
      lease_ms: 1500,
    });
    // The heartbeat moves on (every lease/3) while the process lives.
    await waitFor(async () => (await read()).heartbeat_at > first.heartbeat_at, 20_000);

    const hooks = createHookClient(env().nc, env().names);
    const blocked = await hooks.invoke(HookName.PreToolUse, {
      tool_name: "shell",
      arguments: { cmd: "rm -rf /" },
    });
    expect(blocked.blocked).toBe(true);
    expect(blocked.decisions).toEqual([
      { handler: "py-guard", action: "block", reason: "recursive deletes are not allowed here" },
    ]);
    const rewritten = await hooks.invoke(HookName.PreToolUse, {
      tool_name: "shell.exec",
      arguments: { cmd: "sudo ls", cwd: "/tmp" },
    });
    expect(rewritten.payload).toEqual({ tool_name: "shell.exec", arguments: { cmd: "ls", cwd: "/tmp" } });
    expect(rewritten.decision_sources).toEqual(["py-guard"]);
    const quiet = await hooks.invoke(HookName.PreToolUse, { tool_name: "shell", arguments: { cmd: "ls" } });
    expect(quiet).toMatchObject({ blocked: false, decisions: [], handler_errors: [] });
    // `match`: not called for other tools (a handler error would show if it were called and failed).
    const other = await hooks.invoke(HookName.PreToolUse, {
      tool_name: "fs.read",
      arguments: { cmd: "rm -rf /" },
    });
    expect(other).toMatchObject({ blocked: false, decisions: [], decision_sources: [] });

    // SIGTERM: it deletes its key (a tombstone) and exits cleanly.
    expect(await guard.stop("SIGTERM")).toBe(0);
    await waitFor(() => dispatcher?.handlers().length === 0, 20_000);
    expect((await kv.get("PreToolUse.py-guard"))?.operation).toBe("DEL");
  });
});
