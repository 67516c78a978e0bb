import { decodeJson, ensureBucket, RuntimeEventBus } from "@geode/bus";
import { type EventEnvelope, HookName } from "@geode/contracts";
import { startHookDispatcher } from "@geode/hook-dispatcher";
import { MiddlewareRegistry } from "@geode/middleware";
import { callLlm, createToolClient } from "@geode/runtime";
import { serveHook, serveTool } from "@geode/sdk";
import { useTestEnv, waitFor } from "@geode/testing";
import { startToolExecutor } from "@geode/tool-executor";
import { describe, expect, it } from "vitest";

const env = useTestEnv();

describe("remote tools", () => {
  it("a tool served from another connection runs through the full boundary from the SDK", async () => {
    const { names } = env();
    const [providerConn, serviceConn, runtimeConn, handlerConn] = await Promise.all([
      env().connect("provider"),
      env().connect("services"),
      env().connect("runtime"),
      env().connect("handlers"),
    ]);
    const dispatcher = await startHookDispatcher({ nc: serviceConn, names });
    const executor = await startToolExecutor({ nc: serviceConn, names, tools: [] });
    const terminalSaw: Array<{ args: Record<string, unknown>; session: string }> = [];
    const tool = await serveTool(
      { nc: providerConn, names },
      {
        name: "crm.note",
        description: "adds a note to a customer record",
        input_schema: {
          type: "object",
          properties: { customer: { type: "string" }, text: { type: "string" } },
          required: ["customer", "text"],
          additionalProperties: false,
        },
        effect: "mutation",
        requires_approval: false,
      },
      (args, call) => {
        terminalSaw.push({ args, session: call.correlation.session_id });
        if (args["customer"] === "nobody") throw new Error("no such customer");
        return { result: { note_id: `n-${terminalSaw.length}` } };
      },
    );
    const hookSaw: string[] = [];
    const handlers = [
      await serveHook({ nc: handlerConn, names }, HookName.PreToolUse, { name: "crm-pre" }, (e) => {
        hookSaw.push(`pre:${e.payload["tool_name"]}`);
        return null;
      }),
      await serveHook({ nc: handlerConn, names }, HookName.PostToolUse, { name: "crm-post" }, (e) => {
        hookSaw.push(`post:${JSON.stringify(e.payload["result"])}:${e.payload["has_error"]}`);
        return { action: "add_context", reason: "customer notified" };
      }),
    ];
    await waitFor(() => dispatcher.handlers().length === 2);
    try {
      const client = createToolClient({ nc: runtimeConn, names });
      const reply = await client.execute({
        tool_name: "crm.note",
        arguments: { customer: "c-9", text: "called back" },
        correlation: { session_id: "sess-1", tool_call_id: "call-1" },
      });
      expect(reply).toEqual({
        status: "completed",
        result: { note_id: "n-1" },
        has_error: false,
        executed: true,
        additional_context: ["customer notified"],
        reason: "",
        receipt: { key: "sess-1.call-1", state: "completed", revision: expect.any(Number) },
      });
      expect(terminalSaw).toEqual([{ args: { customer: "c-9", text: "called back" }, session: "sess-1" }]);
      expect(hookSaw).toEqual(["pre:crm.note", 'post:{"note_id":"n-1"}:false']);

      // The provider's throw is an error result: PostToolUse sees has_error, the receipt completes.
      const failed = await client.execute({
        tool_name: "crm.note",
        arguments: { customer: "nobody", text: "x" },
        correlation: { session_id: "sess-1", tool_call_id: "call-2" },
      });
      expect(failed).toMatchObject({ status: "failed", has_error: true, executed: true });
      expect(failed.result["error"]).toContain("no such customer");
      expect(failed.receipt?.state).toBe("completed");
      expect(hookSaw.at(-1)).toMatch(/:true$/);

      await expect(
        client.execute({
          tool_name: "crm.note",
          arguments: { customer: "c-9" },
          correlation: { session_id: "sess-1", tool_call_id: "call-3" },
        }),
      ).rejects.toMatchObject({ code: "schema_invalid" });
      expect(terminalSaw).toHaveLength(2);

      const toolsKv = await ensureBucket(serviceConn, names, "tools");
      expect(decodeJson((await toolsKv.get("crm.note"))!.value)).toMatchObject({
        name: "crm.note",
        effect: "mutation",
      });
    } finally {
      for (const h of handlers) await h.close();
      await tool.close();
      await executor.stop();
      await dispatcher.stop();
    }
    const toolsKv = await ensureBucket(env().nc, names, "tools");
    expect((await toolsKv.get("crm.note"))?.operation).toBe("DEL");
  });
});

describe("middleware modules from configuration", () => {
  it("loads each module's register(registry) at start and runs its middleware on every call", async () => {
    const { nc, names } = env();
    const events = await RuntimeEventBus.create({ nc, names, source: "tool-executor" });
    const seen: EventEnvelope[] = [];
    events.subscribe((e) => {
      seen.push(e);
    });
    const dispatcher = await startHookDispatcher({ nc, names });
    const executor = await startToolExecutor({
      nc,
      names,
      events,
      config: { middlewareModules: ["./examples/tools/middleware.ts"] },
    });
    try {
      const reply = await createToolClient({ nc, names }).execute({
        tool_name: "echo",
        arguments: { text: "  padded  " },
        correlation: { tool_call_id: "mw-mod-1" },
      });
      expect(reply.result).toEqual({ text: "padded" });
      const audits = seen
        .filter((e) => e.event === "extension_invoked" && e.correlation.tool_call_id === "mw-mod-1")
        .map((e) => [e.payload["surface"], e.payload["extension"], e.payload["status"]]);
      expect(audits).toEqual([
        ["tool_request", "trim-strings", "ok"],
        ["tool_execution", "timing", "called_next"],
      ]);
      await expect(
        startToolExecutor({
          nc,
          names,
          config: { middlewareModules: ["./examples/tools/call-tool-missing.ts"] },
        }),
      ).rejects.toThrow();
    } finally {
      await executor.stop();
      await dispatcher.stop();
    }
  });
});

describe("callLlm", () => {
  it("runs both LLM join points around the adapter and publishes the call's events", async () => {
    const { nc, names } = env();
    const events = await RuntimeEventBus.create({ nc, names, source: "runtime" });
    const onWire: EventEnvelope[] = [];
    const sub = nc.subscribe(names.eventsAll, {
      callback: (_err, m) => {
        onWire.push(decodeJson(m.data) as EventEnvelope);
      },
    });
    const registry = new MiddlewareRegistry();
    registry.registerLlmRequest({ name: "temperature" }, (req) => ({ ...req, temperature: 0 }));
    registry.registerLlmExecution({ name: "retry-once" }, (_req, next) => next());
    const adapterSaw: unknown[] = [];
    const corr = { session_id: "s-llm", llm_call_id: "l-1" };
    try {
      const response = await callLlm(
        async (req) => {
          adapterSaw.push(req);
          return { text: "hello", usage: { input_tokens: 3, output_tokens: 1 } };
        },
        { model: "m-1", provider: "p", system: "be brief", messages: [{ role: "user", content: "hi" }] },
        corr,
        { registry, events },
      );
      expect(response).toMatchObject({ text: "hello" });
      expect(adapterSaw).toEqual([
        {
          model: "m-1",
          provider: "p",
          system: "be brief",
          messages: [{ role: "user", content: "hi" }],
          temperature: 0,
        },
      ]);
      await expect(
        callLlm(
          async () => {
            throw new Error("provider 529");
          },
          { model: "m-1", messages: [] },
          { session_id: "s-llm", llm_call_id: "l-2" },
          { events },
        ),
      ).rejects.toThrow("provider 529");
      await events.flush();
      await waitFor(() => onWire.some((e) => e.event === "llm_call_failed"));
      const mine = (id: string) =>
        onWire
          .filter((e) => e.correlation.llm_call_id === id)
          .map((e) =>
            e.event === "extension_invoked" ? `${e.payload["surface"]}:${e.payload["status"]}` : e.event,
          );
      expect(mine("l-1")).toEqual([
        "llm_request:ok",
        "llm_call_started",
        "llm_execution:called_next",
        "llm_call_ended",
      ]);
      expect(mine("l-2")).toEqual(["llm_call_started", "llm_call_failed"]);
      const ended = onWire.find((e) => e.event === "llm_call_ended")!;
      expect(ended.payload).toMatchObject({ model: "m-1", usage: { input_tokens: 3, output_tokens: 1 } });
      expect(JSON.stringify(onWire)).not.toContain("be brief");
    } finally {
      sub.unsubscribe();
    }
  });
});
