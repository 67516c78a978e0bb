import path from "node:path";
import {
  ensureBucket,
  ensureCheckpointStream,
  ensureEventStreams,
  ensureResultStore,
  requestJson,
} from "@geode/bus";
import { names as buildNames, isResultRef } from "@geode/contracts";
import { startHookDispatcher } from "@geode/hook-dispatcher";
import { startMcpBridge } from "@geode/mcp-bridge";
import { createToolClient } from "@geode/runtime";
import { McpServerStore } from "@geode/state";
import { REPO_ROOT, uniqueNamespace, waitFor } from "@geode/testing";
import { startToolExecutor } from "@geode/tool-executor";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keptLogger } from "./policy-support.js";
import { type SecuredNats, startSecuredNats } from "./security-support.js";

// A second nats-server with the generated per-role configuration, on its own loopback port.
const ns = uniqueNamespace("sec");
const n = buildNames(ns);
const roles = { namespace: ns, handlers: ["guard", "other"], toolProviders: ["fs.write"] };
let secured: SecuredNats;
const as = (user: string) => secured.as(user, { reconnect: false });

const kv = (nc: NatsConnection, bucket: string) => new Kvm(nc).open(bucket);
const json = (v: unknown) => JSON.stringify(v);

/** What a denied request, KV write or JetStream publish fails with. */
const denied = /Permissions Violation for Publish/;

beforeAll(async () => {
  secured = await startSecuredNats(roles);
});

afterAll(async () => {
  await secured?.stop();
});

describe("the generated configuration", () => {
  it("refuses a wrong password and an unknown user", async () => {
    await expect(
      connect({ servers: secured.server.url, user: "runtime", pass: "nope", reconnect: false }),
    ).rejects.toThrow(/authorization/i);
    await expect(connect({ servers: secured.server.url, reconnect: false })).rejects.toThrow(
      /authorization/i,
    );
  });
});

describe("each role can do its own job", () => {
  it("every service and the runtime provision the streams and buckets they use", async () => {
    const runtime = await as("runtime");
    await ensureEventStreams(runtime, n);
    await ensureBucket(runtime, n, "sessions");
    await ensureBucket(runtime, n, "runs");
    const dispatcher = await as("hook-dispatcher");
    await ensureBucket(dispatcher, n, "hookHandlers");
    await ensureBucket(dispatcher, n, "webhooks");
    const executor = await as("tool-executor");
    await ensureBucket(executor, n, "toolReceipts");
    await ensureBucket(executor, n, "tools");
    const verifier = await as("verifier");
    await ensureBucket(verifier, n, "verify");
    await ensureBucket(verifier, n, "sessions");
    const recorder = await as("activity-recorder");
    await ensureEventStreams(recorder, n);
    await ensureBucket(recorder, n, "runs");
    const gateway = await as("agent-gateway");
    await ensureEventStreams(gateway, n);
    await ensureBucket(gateway, n, "agents");
    await ensureBucket(gateway, n, "sessions");
    await ensureBucket(gateway, n, "runs");
    await ensureBucket(gateway, n, "tools");
    await ensureBucket(gateway, n, "mcpServers");
    await ensureBucket(gateway, n, "llmProviders");
    await ensureBucket(gateway, n, "llmPrices");
    await ensureBucket(gateway, n, "budgets");
    // The gateway keeps the spend counters; providers, prices and budgets it only reads.
    await (await ensureBucket(gateway, n, "llmSpend")).put("agent.a.1h.0", "{}");
    await expect((await ensureBucket(gateway, n, "llmProviders")).put("p", "{}")).rejects.toThrow();
    const guard = await as("policy-guard");
    await ensureBucket(guard, n, "hookHandlers");
    await ensureBucket(guard, n, "policies");
    await ensureBucket(guard, n, "agents");
    await ensureBucket(guard, n, "sessions");
    await ensureBucket(guard, n, "tools");
    const notary = await as("notary");
    await ensureEventStreams(notary, n);
    await ensureCheckpointStream(notary, n);
    await ensureBucket(notary, n, "notary");
    const jsm = await jetstreamManager(await as("operator"));
    const streams: string[] = [];
    for await (const s of jsm.streams.names()) streams.push(s);
    expect(streams.sort()).toEqual(
      [
        n.eventsStream,
        n.timelineStream,
        n.checkpointsStream,
        ...Object.values(n.buckets).map((b) => `KV_${b}`),
      ].sort(),
    );
  });

  it("the runtime publishes events and owns sessions and runs", async () => {
    const runtime = await as("runtime");
    const ack = await jetstream(runtime).publish(n.event("turn_completed"), json({ id: "e1" }), {
      msgID: "e1",
    });
    expect(ack.stream).toBe(n.eventsStream);
    const sessions = await kv(runtime, n.buckets.sessions);
    await sessions.put("s1", json({ status: "active" }));
    expect((await sessions.get("s1"))?.json()).toEqual({ status: "active" });
    await (await kv(runtime, n.buckets.runs)).put("r1", json({ active: true }));
  });

  it("a handler registers itself, the dispatcher watches the registry and calls it", async () => {
    const guard = await as("handler-guard");
    const registry = await kv(guard, n.buckets.hookHandlers);
    await registry.create("PreToolUse.guard", json({ name: "guard" }));
    expect((await registry.get("PreToolUse.guard"))?.json()).toEqual({ name: "guard" });

    guard.subscribe(n.hookHandler("PreToolUse", "guard"), {
      queue: "guard",
      callback: (_err, m) => void m.respond(json({ decision: null })),
    });
    await guard.flush();

    const dispatcher = await as("hook-dispatcher");
    const watch = await (await kv(dispatcher, n.buckets.hookHandlers)).watch();
    for await (const e of watch) {
      expect(e.key).toBe("PreToolUse.guard");
      break;
    }
    watch.stop();
    const reply = await dispatcher.request(n.hookHandler("PreToolUse", "guard"), json({}), {
      timeout: 5_000,
    });
    expect(reply.json()).toEqual({ decision: null });
  });

  it("the tool-executor writes receipts, asks approvers and calls a tool provider", async () => {
    const executor = await as("tool-executor");
    await (await kv(executor, n.buckets.toolReceipts)).create("s1.c1", json({ state: "admitted" }));

    const approver = await as("approver");
    approver.subscribe(n.approvalRequest, {
      queue: "approvers",
      callback: (_err, m) => void m.respond(json({ decision: "allow", approver: "ops" })),
    });
    await approver.flush();
    const approval = await executor.request(n.approvalRequest, json({}), { timeout: 5_000 });
    expect(approval.json()).toEqual({ decision: "allow", approver: "ops" });

    const provider = await as("tool-fs.write");
    await (await kv(provider, n.buckets.tools)).put("fs.write", json({ name: "fs.write" }));
    provider.subscribe(n.toolTerminal("fs.write"), {
      callback: (_err, m) => void m.respond(json({ result: { ok: true }, has_error: false })),
    });
    await provider.flush();
    const result = await executor.request(n.toolTerminal("fs.write"), json({}), { timeout: 5_000 });
    expect(result.json()).toEqual({ result: { ok: true }, has_error: false });
  });

  it("the verifier keeps its state and pauses sessions", async () => {
    const verifier = await as("verifier");
    await (await kv(verifier, n.buckets.verify)).put("s1.t1", json({ attempt: 0 }));
    await (await kv(verifier, n.buckets.sessions)).put("s1", json({ status: "paused" }));
  });

  it("the recorder reads the event stream through a durable consumer", async () => {
    const recorder = await as("activity-recorder");
    const jsm = await jetstreamManager(recorder, { checkAPI: false });
    await jsm.consumers.add(n.eventsStream, { durable_name: "recorder", ack_policy: AckPolicy.Explicit });
    const consumer = await jetstream(recorder).consumers.get(n.eventsStream, "recorder");
    const m = await consumer.next({ expires: 2_000 });
    expect(m?.subject).toBe(n.event("turn_completed"));
    expect(await m?.ackAck()).toBe(true);
  });
  it("the hook-dispatcher serves webhook handlers: reads the webhooks, keeps their registrations, serves their subjects", async () => {
    await (await kv(await as("operator"), n.buckets.webhooks)).put("PreToolUse.hook", json({ name: "hook" }));
    const dispatcher = await as("hook-dispatcher");
    const webhooks = await kv(dispatcher, n.buckets.webhooks);
    expect((await webhooks.get("PreToolUse.hook"))?.json()).toEqual({ name: "hook" });
    await expect(webhooks.put("PreToolUse.intruder", json({}))).rejects.toThrow(denied);
    const registry = await kv(dispatcher, n.buckets.hookHandlers);
    await registry.put("PreToolUse.hook", json({ name: "hook" }));
    await registry.delete("PreToolUse.hook");
    const sub = dispatcher.subscribe(n.hookHandler("PreToolUse", "hook"), { queue: "hook" });
    await dispatcher.flush();
    expect(sub.isClosed()).toBe(false);
    sub.unsubscribe();
  });
});

describe("a handler is confined to its own subjects and registration", () => {
  it("cannot publish runtime events", async () => {
    const guard = await as("handler-guard");
    await expect(jetstream(guard).publish(n.event("turn_completed"), json({ id: "forged" }))).rejects.toThrow(
      denied,
    );
    guard.publish(n.event("turn_completed"), json({ id: "forged-plain" }));
    await guard.flush();
    const jsm = await jetstreamManager(await as("operator"));
    expect((await jsm.streams.info(n.eventsStream)).state.messages).toBe(1); // only the runtime's
  });

  it("cannot execute tools", async () => {
    const executor = await as("tool-executor");
    let calls = 0;
    // A stand-in in the executors' queue group, gone after this test: a later test's real
    // executor shares the connection and the group, and would lose calls to it.
    const standIn = executor.subscribe(n.toolExecute, {
      queue: "tool-executor",
      callback: (_err, m) => {
        calls++;
        m.respond(json({ status: "completed" }));
      },
    });
    try {
      await executor.flush();
      const guard = await as("handler-guard");
      await expect(
        guard.request(n.toolExecute, json({ tool_name: "shell" }), { timeout: 5_000 }),
      ).rejects.toThrow(denied);
      expect(calls).toBe(0);
    } finally {
      standIn.unsubscribe();
      await executor.flush();
    }
  });

  it("cannot cancel other callers' hook invocations; the runtime can", async () => {
    const dispatcher = await as("hook-dispatcher");
    const heard: string[] = [];
    dispatcher.subscribe(n.hookCancelAll, {
      callback: (_err, m) => {
        heard.push(m.subject);
      },
    });
    await dispatcher.flush();
    const guard = await as("handler-guard");
    guard.publish(n.hookCancel("from-handler"));
    await guard.flush();
    const runtime = await as("runtime");
    runtime.publish(n.hookCancel("from-runtime"));
    await runtime.flush();
    await waitFor(() => heard.length > 0);
    await dispatcher.flush();
    expect(heard).toEqual([n.hookCancel("from-runtime")]);
  });

  it("cannot receive or answer approval requests", async () => {
    const guard = await as("handler-guard");
    const sub = guard.subscribe(n.approvalRequest, { queue: "approvers" });
    const closed = await sub.closed;
    expect(closed).toMatchObject({ name: "PermissionViolationError", operation: "subscription" });
    // The only approver left is the real one (subscribed above): it answers, never the handler.
    const executor = await as("tool-executor");
    const approval = await executor.request(n.approvalRequest, json({}), { timeout: 5_000 });
    expect(approval.json()).toMatchObject({ approver: "ops" });
  });

  it("cannot read other components' replies", async () => {
    const guard = await as("handler-guard");
    const sub = guard.subscribe("_INBOX.>");
    expect(await sub.closed).toMatchObject({ name: "PermissionViolationError" });
  });

  it("cannot write receipts", async () => {
    const guard = await as("handler-guard");
    const receipts = await kv(guard, n.buckets.toolReceipts);
    await expect(receipts.put("s1.c2", json({ state: "completed" }))).rejects.toThrow(denied);
    const operatorView = await kv(await as("operator"), n.buckets.toolReceipts);
    expect(await operatorView.get("s1.c2")).toBeNull();
  });

  it("cannot write or delete another handler's registration", async () => {
    const other = await as("handler-other");
    await (await kv(other, n.buckets.hookHandlers)).create("Stop.other", json({ name: "other" }));
    const guard = await as("handler-guard");
    const registry = await kv(guard, n.buckets.hookHandlers);
    await expect(registry.put("PreToolUse.other", json({ name: "other" }))).rejects.toThrow(denied);
    await expect(registry.delete("Stop.other")).rejects.toThrow(denied);
    expect((await registry.get("Stop.other"))?.operation).toBe("PUT");
    expect(await registry.get("PreToolUse.other")).toBeNull();
  });

  it("cannot serve another handler's subject", async () => {
    const guard = await as("handler-guard");
    const sub = guard.subscribe(n.hookHandler("PreToolUse", "other"));
    expect(await sub.closed).toMatchObject({ name: "PermissionViolationError" });
  });
});

describe("the agent gateway", () => {
  it("reads the agents an operator writes, but cannot write one itself", async () => {
    await (await kv(await as("operator"), n.buckets.agents)).put("laptop", json({ name: "laptop" }));
    const agents = await kv(await as("agent-gateway"), n.buckets.agents);
    expect((await agents.get("laptop"))?.json()).toEqual({ name: "laptop" });
    await expect(agents.put("intruder", json({ name: "intruder" }))).rejects.toThrow(denied);
    await expect(agents.delete("laptop")).rejects.toThrow(denied);
  });

  it("cannot serve a handler's subject, in the guard's queue group or in any other", async () => {
    const gateway = await as("agent-gateway");
    for (const queue of ["guard", "intruder", undefined]) {
      const sub = gateway.subscribe(n.hookHandler("PreToolUse", "guard"), queue ? { queue } : {});
      expect(await sub.closed, String(queue)).toMatchObject({
        name: "PermissionViolationError",
        operation: "subscription",
      });
    }
    const all = gateway.subscribe(n.hookHandlerAll);
    expect(await all.closed).toMatchObject({ name: "PermissionViolationError" });
  });

  it("cannot write, overwrite or delete a registration, nor read the webhooks' secrets", async () => {
    const guard = await as("handler-guard");
    const closed = json({ name: "guard", failure_mode: "closed" });
    await (await kv(guard, n.buckets.hookHandlers)).put("PermissionRequest.guard", closed);
    const registry = await kv(await as("agent-gateway"), n.buckets.hookHandlers);
    const open = json({ name: "guard", failure_mode: "open" });
    await expect(registry.put("PermissionRequest.guard", open)).rejects.toThrow(denied);
    await expect(registry.create("Stop.intruder", json({ name: "intruder" }))).rejects.toThrow(denied);
    await expect(registry.delete("PermissionRequest.guard")).rejects.toThrow(denied);
    const operatorView = await kv(await as("operator"), n.buckets.hookHandlers);
    expect((await operatorView.get("PermissionRequest.guard"))?.json()).toEqual({
      name: "guard",
      failure_mode: "closed",
    });
    expect(await operatorView.get("Stop.intruder")).toBeNull();
    await (await kv(await as("operator"), n.buckets.webhooks)).put("Stop.hook", json({ secret: "s" }));
    const webhooks = await kv(await as("agent-gateway"), n.buckets.webhooks);
    await expect(webhooks.get("Stop.hook")).rejects.toThrow(denied);
  });

  it("cannot write receipts, nor answer approvals", async () => {
    const gateway = await as("agent-gateway");
    await expect((await kv(gateway, n.buckets.toolReceipts)).put("s1.c9", json({}))).rejects.toThrow(denied);
    const sub = gateway.subscribe(n.approvalRequest);
    expect(await sub.closed).toMatchObject({ name: "PermissionViolationError" });
  });
});

describe("the runtime cannot touch what services own", () => {
  it("cannot write receipts, registrations or tool definitions", async () => {
    const runtime = await as("runtime");
    await expect((await kv(runtime, n.buckets.toolReceipts)).put("s1.c3", json({}))).rejects.toThrow(denied);
    await expect((await kv(runtime, n.buckets.hookHandlers)).put("Stop.fake", json({}))).rejects.toThrow(
      denied,
    );
    await expect((await kv(runtime, n.buckets.tools)).put("shell", json({}))).rejects.toThrow(denied);
  });

  it("reads tool definitions and receipts (its tool client's wait and timeout answer)", async () => {
    const runtime = await as("runtime");
    // Written by their owners in the tests above.
    expect((await (await kv(runtime, n.buckets.toolReceipts)).get("s1.c1"))?.json()).toEqual({
      state: "admitted",
    });
    expect((await (await kv(runtime, n.buckets.tools)).get("fs.write"))?.json()).toEqual({
      name: "fs.write",
    });
  });

  it("cannot impersonate a handler or the approvers", async () => {
    const runtime = await as("runtime");
    const sub = runtime.subscribe(n.approvalRequest);
    expect(await sub.closed).toMatchObject({ name: "PermissionViolationError" });
    await expect(
      runtime.request(n.hookHandler("PreToolUse", "guard"), json({}), { timeout: 5_000 }),
    ).rejects.toThrow(denied);
  });
});

describe("the mcp-bridge", () => {
  it("runs an upstream: registers its tools, serves terminals and the forward, writes large results, publishes its events", async () => {
    const operator = await as("operator");
    await ensureResultStore(await as("tool-executor"), n);
    const store = await McpServerStore.open({ nc: operator, names: n });
    await store.put({
      name: "up",
      transport: "stdio",
      command: process.execPath,
      args: [path.join(REPO_ROOT, "test/fixtures/mcp-changing-server.mjs")],
      created_at: Date.now(),
      updated_by: "ops",
    });
    const bridge = await startMcpBridge({
      nc: await as("mcp-bridge"),
      names: n,
      log: keptLogger([]),
      env: {},
      // Every result travels through `{ns}_results`.
      resultInlineBytes: 1,
    });
    const dispatcher = await startHookDispatcher({ nc: await as("hook-dispatcher"), names: n });
    const executor = await startToolExecutor({ nc: await as("tool-executor"), names: n, tools: [] });
    try {
      await waitFor(() => bridge.servers()[0]?.state === "connected", 20_000);
      const tools = await kv(await as("runtime"), n.buckets.tools);
      expect((await tools.get("up_grow"))?.json()).toMatchObject({ mcp: { server: "up", tool: "grow" } });

      const client = createToolClient({ nc: await as("runtime"), names: n });
      const reply = await client.execute({
        tool_name: "up_grow",
        arguments: {},
        correlation: { session_id: "s-mcp", tool_call_id: "c-1" },
      });
      expect(reply).toMatchObject({ status: "completed", has_error: false });
      expect(isResultRef(reply.result)).toBe(false);
      expect(reply.result).toEqual({ content: [{ type: "text", text: "1 extra tools" }] });
      // The list it changed upstream is followed: the bridge writes the new tool's definition.
      await waitFor(async () => (await tools.get("up_extra_1")) !== null);

      const forwarded = await requestJson<{ result: { resources: unknown[] } }>(
        await as("agent-gateway"),
        n.mcpForward("up"),
        { method: "resources/list", params: {} },
        { timeoutMs: 10_000 },
      );
      expect(forwarded.result.resources).toHaveLength(5);
      // The bridge wrote the result to `{ns}_results` as the tool (the executor's limit is far higher).
      const results = await (await jetstreamManager(operator)).streams.info(n.resultStream);
      expect(results.state.messages).toBeGreaterThan(0);
    } finally {
      await executor.stop();
      await dispatcher.stop();
      await bridge.stop();
    }
    const events = await waitFor(async () => {
      const jsm = await jetstreamManager(operator);
      const seen: string[] = [];
      const info = await jsm.streams.info(n.eventsStream);
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage(n.eventsStream, { seq }).catch(() => null);
        const e = m?.json<{ event: string; source: string }>();
        if (e?.source === "mcp-bridge") seen.push(e.event);
      }
      return seen.includes("mcp_server_failed") ? seen : null;
    });
    expect(events).toEqual(["mcp_server_connected", "mcp_server_failed"]);
    expect(secured.violations.filter((v) => v.startsWith("mcp-bridge:"))).toEqual([]);
  });

  it("cannot invoke hooks, execute tools, answer approvals, publish other events or write other buckets", async () => {
    const bridge = await as("mcp-bridge");
    await expect(
      bridge.request(n.hookHandler("PreToolUse", "guard"), json({}), { timeout: 5_000 }),
    ).rejects.toThrow(denied);
    await expect(bridge.request(n.toolExecute, json({}), { timeout: 5_000 })).rejects.toThrow(denied);
    await expect(jetstream(bridge).publish(n.event("turn_completed"), json({}))).rejects.toThrow(denied);
    const approvals = bridge.subscribe(n.approvalRequest);
    expect(await approvals.closed).toMatchObject({ name: "PermissionViolationError" });
    const handlers = bridge.subscribe(n.hookHandlerAll);
    expect(await handlers.closed).toMatchObject({ name: "PermissionViolationError" });
    for (const bucket of [
      n.buckets.mcpServers,
      n.buckets.agents,
      n.buckets.toolReceipts,
      n.buckets.hookHandlers,
    ])
      await expect((await kv(bridge, bucket)).put("intruder", json({})), bucket).rejects.toThrow(denied);
    // Nor may it read the webhooks' secrets.
    await expect((await kv(bridge, n.buckets.webhooks)).get("Stop.hook")).rejects.toThrow(denied);
  });
});
