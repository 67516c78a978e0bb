import { encodeJson, ensureBucket, RuntimeEventBus } from "@geode/bus";
import { HookName, type ToolExecuteReply } from "@geode/contracts";
import { startHookDispatcher } from "@geode/hook-dispatcher";
import { createToolClient } from "@geode/runtime";
import { serveHook, serveTool } from "@geode/sdk";
import { useTestEnv, waitFor } from "@geode/testing";
import { startToolExecutor } from "@geode/tool-executor";
import { describe, expect, it } from "vitest";
import { blockingTool, recordingTool, spawnToolExecutor } from "./tools-support.js";

const env = useTestEnv();

describe("admission receipts", () => {
  it("the same operation key twice executes the terminal once and replays the stored result", async () => {
    const { nc, names } = env();
    const tool = recordingTool("pay.charge", "communication", {
      run: (args) => ({ result: { charged: args["amount"], at: Date.now() }, has_error: false }),
    });
    const dispatcher = await startHookDispatcher({ nc, names });
    const executor = await startToolExecutor({ nc, names, tools: [tool] });
    try {
      const client = createToolClient({ nc, names });
      const req = {
        tool_name: "pay.charge",
        arguments: { amount: 5 },
        correlation: { session_id: "s", tool_call_id: "c-1" },
        operation_key: "invoice-42",
      };
      const first = await client.execute(req);
      expect(first).toMatchObject({
        status: "completed",
        receipt: { key: "invoice-42", state: "completed" },
      });
      const second = await client.execute({ ...req, correlation: { session_id: "s", tool_call_id: "c-2" } });
      expect(second).toMatchObject({ status: "replayed", executed: false, receipt: { key: "invoice-42" } });
      expect(second.result).toEqual(first.result);
      expect(tool.calls).toHaveLength(1);
    } finally {
      await executor.stop();
      await dispatcher.stop();
    }
  });

  it("concurrent identical mutation calls on two executor replicas execute once", async () => {
    const { names } = env();
    const [a, b, caller] = await Promise.all([
      env().connect("replica-a"),
      env().connect("replica-b"),
      env().connect(),
    ]);
    let terminalCalls = 0;
    const served = await serveTool(
      { nc: caller, names },
      {
        name: "ledger.append",
        description: "appends to a ledger",
        input_schema: { type: "object" },
        effect: "mutation",
        requires_approval: false,
      },
      async () => {
        terminalCalls++;
        await new Promise((r) => setTimeout(r, 50));
        return { result: { appended: true } };
      },
    );
    const dispatcher = await startHookDispatcher({ nc: a, names });
    const replicas = await Promise.all([
      startToolExecutor({ nc: a, names, tools: [] }),
      startToolExecutor({ nc: b, names, tools: [] }),
    ]);
    try {
      const client = createToolClient({ nc: caller, names });
      const replies = await Promise.all(
        Array.from({ length: 8 }, () =>
          client.execute({
            tool_name: "ledger.append",
            arguments: { line: "x" },
            correlation: { session_id: "s", tool_call_id: "same" },
          }),
        ),
      );
      expect(terminalCalls).toBe(1);
      expect(replies.filter((r) => r.executed)).toHaveLength(1);
      // The others found the receipt admitted under a live lease, or already completed: never
      // `indeterminate` while the replica running it lives.
      for (const r of replies) expect(["completed", "replayed", "in_progress"]).toContain(r.status);
      // Once committed, every later retry replays.
      const later = await client.execute({
        tool_name: "ledger.append",
        arguments: { line: "x" },
        correlation: { session_id: "s", tool_call_id: "same" },
      });
      expect(later.status).toBe("replayed");
      expect(terminalCalls).toBe(1);
    } finally {
      for (const r of replicas) await r.stop();
      await dispatcher.stop();
      await served.close();
    }
  });

  it("a second call while the first runs gets in_progress (the lease is renewed past its length), then replays", async () => {
    const { nc, names } = env();
    const tool = await blockingTool(
      env(),
      { name: "report.build", effect: "mutation", requires_approval: false },
      { built: true },
    );
    const dispatcher = await startHookDispatcher({ nc, names });
    const executor = await startToolExecutor({ nc, names, tools: [], config: { receiptLeaseMs: 300 } });
    try {
      const client = createToolClient({ nc, names });
      const call = {
        tool_name: "report.build",
        arguments: { month: "2024-05" },
        correlation: { session_id: "s", tool_call_id: "build-1" },
      };
      const first = client.execute(call);
      await waitFor(() => tool.calls() === 1);
      // Several lease lengths later the first call still holds its lease: it renews it while it runs.
      await new Promise((r) => setTimeout(r, 1_000));
      // Another call of the same logical operation (its own tool call id, the same operation key).
      const second = await client.execute({
        ...call,
        operation_key: "s.build-1",
        correlation: { session_id: "s", tool_call_id: "build-2" },
      });
      expect(second).toMatchObject({
        status: "in_progress",
        executed: false,
        has_error: false,
        result: {},
        receipt: { key: "s.build-1", state: "admitted" },
      });
      expect(second.reason).toContain("still running");
      expect(await client.execute(call)).toMatchObject({ status: "in_progress", executed: false });
      expect(tool.calls()).toBe(1);

      tool.release();
      expect(await first).toMatchObject({
        status: "completed",
        executed: true,
        receipt: { state: "completed" },
      });
      const stored = await ensureBucket(nc, names, "toolReceipts").then((kv) => kv.get("s.build-1"));
      expect(stored?.json()).toMatchObject({ state: "completed", lease_until: null });
      expect(await client.execute(call)).toMatchObject({ status: "replayed", result: { built: true } });
      expect(tool.calls()).toBe(1);
    } finally {
      tool.release();
      await executor.stop();
      await dispatcher.stop();
      await tool.close();
    }
  });

  it("an executor killed mid-call: in_progress until its lease lapses, then indeterminate; never re-run", async () => {
    const { nc, names } = env();
    const dispatcher = await startHookDispatcher({ nc, names });
    const tool = await blockingTool(env(), { name: "deploy.run", effect: "admin", requires_approval: false });
    const postToolUse: string[] = [];
    const post = await serveHook({ nc, names }, HookName.PostToolUse, { name: "post-watch" }, (e) => {
      postToolUse.push(String(e.payload["tool_name"]));
      return null;
    });
    const leaseMs = 3_000;
    const child = await spawnToolExecutor(env(), { GEODE_RECEIPT_LEASE_MS: String(leaseMs) });
    let survivor: { stop(): Promise<void> } | undefined;
    try {
      const call = {
        tool_name: "deploy.run",
        arguments: { env: "prod" },
        correlation: { session_id: "s", tool_call_id: "deploy-1" },
      };
      const client = createToolClient({ nc, names });
      // The caller of the first attempt never hears back (its executor dies); it is not awaited.
      void client.execute(call, { timeoutMs: 20_000 }).catch(() => undefined);
      await waitFor(() => tool.calls() === 1, 20_000);
      // Another replica, started while the first call runs in the child, answers the retries.
      survivor = await startToolExecutor({ nc, names, tools: [] });
      await child.stop("SIGKILL");
      const killedAt = Date.now();

      // The dead executor renewed its lease at most a third of its length ago: still live.
      expect(await client.execute(call)).toMatchObject({ status: "in_progress", executed: false });
      const receipts = await ensureBucket(nc, names, "toolReceipts");
      const leaseUntil = async () =>
        (await receipts.get("s.deploy-1"))?.json<{ lease_until: number }>().lease_until;
      await waitFor(
        async () => ((await leaseUntil()) ?? Number.POSITIVE_INFINITY) < Date.now(),
        leaseMs + 5_000,
      );
      // Lapsed no later than one lease length after the kill (plus the poll's own delay).
      expect(((await leaseUntil()) ?? 0) - killedAt).toBeLessThanOrEqual(leaseMs);
      const retry: ToolExecuteReply = await client.execute(call);
      expect(retry).toMatchObject({
        status: "indeterminate",
        executed: false,
        has_error: true,
        receipt: { key: "s.deploy-1", state: "admitted" },
      });
      expect(tool.calls()).toBe(1);
      expect(postToolUse).toEqual([]);
    } finally {
      tool.release();
      await child.stop("SIGKILL");
      await survivor?.stop();
      await post.close();
      await tool.close();
      await dispatcher.stop();
    }
  }, 60_000);
});

describe("remote terminal failures", () => {
  it("no responders is an error result and releases the admission; a timeout is indeterminate", async () => {
    const { nc, names } = env();
    const events = await RuntimeEventBus.create({ nc, names, source: "tool-executor" });
    const dispatcher = await startHookDispatcher({ nc, names });
    const executor = await startToolExecutor({ nc, names, events, tools: [] });
    let release: () => void = () => undefined;
    const slowDone = new Promise<{ result: Record<string, unknown> }>((r) => {
      release = () => r({ result: { late: true } });
    });
    const providerConn = await env().connect("provider");
    // A definition in the tools bucket whose provider is not running.
    const toolsKv = await ensureBucket(nc, names, "tools");
    await toolsKv.put(
      "ghost.write",
      encodeJson({
        name: "ghost.write",
        description: "",
        input_schema: { type: "object" },
        effect: "mutation",
        requires_approval: false,
      }),
    );
    const slow = await serveTool(
      {
        nc: providerConn,
        names,
      },
      {
        name: "slow.write",
        description: "",
        input_schema: { type: "object" },
        effect: "mutation",
        requires_approval: false,
        timeout_ms: 100,
      },
      () => slowDone,
    );
    try {
      const client = createToolClient({ nc, names });
      const call = {
        tool_name: "ghost.write",
        arguments: {},
        correlation: { session_id: "s", tool_call_id: "g-1" },
      };
      const reply = await client.execute(call);
      expect(reply).toMatchObject({ status: "failed", has_error: true, executed: true, receipt: null });
      expect(reply.result["error"]).toContain("no responders");
      // Released: the retry is attempted again instead of being indeterminate.
      await expect(client.execute(call)).resolves.toMatchObject({ status: "failed", executed: true });

      const timedOut = await client.execute({
        tool_name: "slow.write",
        arguments: {},
        correlation: { session_id: "s", tool_call_id: "slow-1" },
      });
      expect(timedOut).toMatchObject({
        status: "indeterminate",
        has_error: true,
        receipt: { state: "admitted" },
      });
      // The executor gave up on it: its lease ended with the time-out, so a retry is indeterminate
      // at once instead of in_progress for a lease length.
      await expect(
        client.execute({
          tool_name: "slow.write",
          arguments: {},
          correlation: { session_id: "s", tool_call_id: "slow-1" },
        }),
      ).resolves.toMatchObject({ status: "indeterminate", executed: false });
    } finally {
      release();
      await slow.close();
      await executor.stop();
      await dispatcher.stop();
    }
  });
});
