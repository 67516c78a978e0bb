import { startHookDispatcher } from "@geode/hook-dispatcher";
import { createToolClient } from "@geode/runtime";
import { useTestEnv, waitFor } from "@geode/testing";
import { startToolExecutor } from "@geode/tool-executor";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockingTool, spawnToolExecutor } from "./tools-support.js";

const env = useTestEnv();
let stopAll: () => Promise<void> = async () => undefined;

const blocking = (definition: Parameters<typeof blockingTool>[1]) => blockingTool(env(), definition);

beforeAll(async () => {
  const { nc, names } = env();
  const dispatcher = await startHookDispatcher({ nc, names });
  stopAll = async () => {
    await dispatcher.stop();
  };
});
afterAll(async () => {
  await stopAll();
});

describe("the SDK's tool client", () => {
  it("waits for the tool's own time limit (plus approval where it needs one), not a fixed 400 s", async () => {
    const { nc, names } = env();
    const quick = await blocking({
      name: "wait.quick",
      effect: "read",
      requires_approval: false,
      timeout_ms: 5_000,
    });
    const guarded = await blocking({
      name: "wait.guarded",
      effect: "admin",
      requires_approval: true,
      timeout_ms: 7_000,
    });
    const unlimited = await blocking({
      name: "wait.forever",
      effect: "read",
      requires_approval: false,
      timeout_ms: 0,
    });
    try {
      const client = createToolClient({ nc, names }, { toolTimeoutMs: 120_000, approvalTimeoutMs: 45_000 });
      // Tool limit + one hook budget (the call's timeout_ms, else 30 s).
      expect(await client.defaultWaitMs({ tool_name: "wait.quick", timeout_ms: 2_000 })).toBe(7_000);
      expect(await client.defaultWaitMs({ tool_name: "wait.quick" })).toBe(35_000);
      expect(await client.defaultWaitMs({ tool_name: "wait.guarded", timeout_ms: 1_000 })).toBe(
        7_000 + 45_000 + 1_000,
      );
      expect(await client.defaultWaitMs({ tool_name: "wait.forever" })).toBe(86_400_000);
      // A built-in (not in the tools bucket): the configured limit, and approval time to be safe.
      expect(await client.defaultWaitMs({ tool_name: "echo", timeout_ms: 1_000 })).toBe(
        120_000 + 45_000 + 1_000,
      );
    } finally {
      for (const t of [quick, guarded, unlimited]) await t.close();
    }
  });

  it("a wait that runs out on a running call reports in_progress from the receipt, not a bare timeout", async () => {
    const { nc, names } = env();
    const tool = await blocking({ name: "slow.sync", effect: "mutation", requires_approval: false });
    const executor = await startToolExecutor({ nc, names, tools: [], config: { receiptLeaseMs: 300 } });
    try {
      const client = createToolClient({ nc, names });
      const call = {
        tool_name: "slow.sync",
        arguments: {},
        correlation: { session_id: "s", tool_call_id: "sync-1" },
      };
      // Long enough for the call to be admitted on a busy machine; the terminal never answers in it.
      const reply = await client.execute(call, { timeoutMs: 4_000 });
      expect(reply).toMatchObject({
        status: "in_progress",
        executed: false,
        has_error: false,
        receipt: { key: "s.sync-1", state: "admitted" },
      });
      expect(reply.reason).toContain("no reply within 4000 ms");
      expect(tool.calls()).toBe(1);
      // Once it is done, the same call replays what it stored.
      tool.release();
      await waitFor(async () => (await client.execute(call, { timeoutMs: 4_000 })).status === "replayed");
      expect(tool.calls()).toBe(1);
    } finally {
      await tool.close();
      await executor.stop();
    }
  });

  it("a call without a receipt (a read tool) still rejects with timeout when the wait runs out", async () => {
    const { nc, names } = env();
    const tool = await blocking({ name: "slow.lookup", effect: "read", requires_approval: false });
    const executor = await startToolExecutor({ nc, names, tools: [] });
    try {
      const client = createToolClient({ nc, names });
      await expect(
        client.execute(
          {
            tool_name: "slow.lookup",
            arguments: {},
            correlation: { session_id: "s", tool_call_id: "look-1" },
          },
          { timeoutMs: 300 },
        ),
      ).rejects.toMatchObject({ code: "timeout" });
    } finally {
      await tool.close();
      await executor.stop();
    }
  });

  it("an executor killed mid-call: the client's own wait (from the tool's limit) ends in indeterminate", async () => {
    const { nc, names } = env();
    const tool = await blocking({
      name: "deploy.slow",
      effect: "admin",
      requires_approval: false,
      timeout_ms: 3_000,
    });
    const child = await spawnToolExecutor(env(), { GEODE_RECEIPT_LEASE_MS: "500" });
    try {
      const client = createToolClient({ nc, names });
      const call = {
        tool_name: "deploy.slow",
        arguments: {},
        correlation: { session_id: "s", tool_call_id: "deploy-1" },
        timeout_ms: 1_000,
      };
      // Default wait: 3 s (the tool's limit) + 1 s (the call's hook budget).
      expect(await client.defaultWaitMs(call)).toBe(4_000);
      const startedAt = Date.now();
      const pending = client.execute(call);
      await waitFor(() => tool.calls() === 1);
      await child.stop("SIGKILL");
      const reply = await pending;
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(4_000);
      expect(reply).toMatchObject({
        status: "indeterminate",
        executed: false,
        has_error: true,
        receipt: { key: "s.deploy-1", state: "admitted" },
      });
      expect(reply.reason).toContain("no reply within 4000 ms");
      expect(tool.calls()).toBe(1);
    } finally {
      await child.stop("SIGKILL");
      await tool.close();
    }
  }, 60_000);
});
