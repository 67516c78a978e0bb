import { type Correlation, correlation, type ExtensionInvokedPayload, sha256 } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import {
  type AuditSink,
  DEFAULT_TIMEOUT_MS,
  type LlmRequest,
  MiddlewareError,
  MiddlewareRegistry,
  runLlmExecution,
  runLlmRequest,
  runToolExecution,
  runToolRequest,
  type ToolCallResult,
} from "./index.js";

const corr = correlation({ session_id: "s1", tool_call_id: "c1" });

function recorder(): AuditSink & { events: ExtensionInvokedPayload[]; correlations: Correlation[] } {
  const events: ExtensionInvokedPayload[] = [];
  const correlations: Correlation[] = [];
  return {
    events,
    correlations,
    emit(_event, payload, c) {
      events.push(payload);
      correlations.push(c);
    },
  };
}

const ok = (result: Record<string, unknown>): ToolCallResult => ({ result, has_error: false });

describe("request join points", () => {
  it("compose N → N+1 in priority order, each seeing the previous result", async () => {
    const registry = new MiddlewareRegistry();
    const sink = recorder();
    registry.registerToolRequest({ name: "second", priority: 2 }, (req) => ({
      ...req,
      arguments: { ...req.arguments, trace: [...(req.arguments["trace"] as string[]), "second"] },
    }));
    registry.registerToolRequest({ name: "first", priority: 1 }, (req) => ({
      ...req,
      arguments: { ...req.arguments, trace: ["first"] },
    }));
    const input = { tool_name: "echo", arguments: { text: "hi" } };
    const out = await runToolRequest(registry, input, { correlation: corr, events: sink });
    expect(out.arguments).toEqual({ text: "hi", trace: ["first", "second"] });
    expect(input.arguments).toEqual({ text: "hi" });
    expect(sink.events.map((e) => [e.extension, e.surface, e.status, e.name])).toEqual([
      ["first", "tool_request", "ok", "echo"],
      ["second", "tool_request", "ok", "echo"],
    ]);
    expect(sink.events[0]!.request_sha256_before).toBe(sha256(input));
    expect(sink.events[0]!.request_sha256_after).toBe(sink.events[1]!.request_sha256_before);
    expect(sink.events[1]!.request_sha256_after).toBe(sha256(out));
    expect(sink.correlations[0]).toEqual(corr);
  });

  it("rejects a middleware that mutates its input, and audits it as an error", async () => {
    const registry = new MiddlewareRegistry();
    const sink = recorder();
    registry.registerToolRequest({ name: "mutator" }, (req) => {
      (req.arguments as Record<string, unknown>)["path"] = "/etc/passwd";
      return req;
    });
    const err = await runToolRequest(
      registry,
      { tool_name: "fs.read", arguments: { path: "a" } },
      { correlation: corr, events: sink },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MiddlewareError);
    expect((err as MiddlewareError).code).toBe("input_mutated");
    expect(sink.events).toMatchObject([{ extension: "mutator", status: "error", reason: "InputMutated" }]);
  });

  it("rejects a result of the wrong shape", async () => {
    const registry = new MiddlewareRegistry();
    registry.registerToolRequest({ name: "bad" }, () => ({ tool_name: "echo" }) as never);
    await expect(
      runToolRequest(registry, { tool_name: "echo", arguments: {} }, { correlation: corr }),
    ).rejects.toMatchObject({ code: "invalid_result" });
  });

  it("refuses a duplicate name at one join point but not across join points", () => {
    const registry = new MiddlewareRegistry();
    registry.registerToolRequest({ name: "audit" }, (r) => r);
    expect(() => registry.registerToolRequest({ name: "audit", priority: 5 }, (r) => r)).toThrow(
      /already registered/,
    );
    expect(() => registry.registerToolExecution({ name: "audit" }, (_r, next) => next())).not.toThrow();
  });

  it("stops a transform at its time limit; defaults are 10 s / 300 s / 900 s", async () => {
    expect(DEFAULT_TIMEOUT_MS).toEqual({
      tool_request: 10_000,
      tool_execution: 300_000,
      llm_request: 10_000,
      llm_execution: 900_000,
    });
    const registry = new MiddlewareRegistry();
    registry.registerToolRequest({ name: "slow", timeoutMs: 20 }, () => new Promise(() => undefined));
    expect(registry.list("tool_request")[0]!.timeoutMs).toBe(20);
    await expect(
      runToolRequest(registry, { tool_name: "echo", arguments: {} }, { correlation: corr }),
    ).rejects.toMatchObject({ code: "middleware_timeout" });
  });
});

describe("execution join points", () => {
  it("run as one onion in priority order around the terminal", async () => {
    const registry = new MiddlewareRegistry();
    const sink = recorder();
    const seen: string[] = [];
    for (const [name, priority] of [
      ["inner", 2],
      ["outer", 1],
    ] as const) {
      registry.registerToolExecution({ name, priority }, async (_req, next) => {
        seen.push(`${name}>`);
        const r = await next();
        seen.push(`<${name}`);
        return r;
      });
    }
    const result = await runToolExecution(
      registry,
      { tool_name: "echo", arguments: { text: "x" } },
      async (req) => {
        seen.push("terminal");
        return ok({ text: req.arguments["text"] });
      },
      { correlation: corr, events: sink },
    );
    expect(result).toEqual(ok({ text: "x" }));
    expect(seen).toEqual(["outer>", "inner>", "terminal", "<inner", "<outer"]);
    expect(sink.events.map((e) => [e.extension, e.status])).toEqual([
      ["inner", "called_next"],
      ["outer", "called_next"],
    ]);
  });

  it("treats not calling next as an explicit short-circuit", async () => {
    const registry = new MiddlewareRegistry();
    const sink = recorder();
    let terminalCalls = 0;
    registry.registerToolExecution({ name: "cache" }, async () => ok({ cached: true }));
    const result = await runToolExecution(
      registry,
      { tool_name: "echo", arguments: {} },
      async () => {
        terminalCalls++;
        return ok({});
      },
      { correlation: corr, events: sink },
    );
    expect(result).toEqual(ok({ cached: true }));
    expect(terminalCalls).toBe(0);
    expect(sink.events).toMatchObject([{ extension: "cache", status: "short_circuit" }]);
  });

  it("lets next be called once: the second call throws and the terminal runs once", async () => {
    const registry = new MiddlewareRegistry();
    let terminalCalls = 0;
    let second: unknown;
    registry.registerToolExecution({ name: "retry" }, async (_req, next) => {
      const first = await next();
      second = await next().catch((e: unknown) => e);
      return first;
    });
    const result = await runToolExecution(
      registry,
      { tool_name: "echo", arguments: {} },
      async () => ok({ n: ++terminalCalls }),
      { correlation: corr },
    );
    expect(result).toEqual(ok({ n: 1 }));
    expect(terminalCalls).toBe(1);
    expect(second).toBeInstanceOf(MiddlewareError);
    expect((second as MiddlewareError).code).toBe("next_called_twice");
  });

  it("refuses a changed request at execution: transforms belong to the request join point", async () => {
    const registry = new MiddlewareRegistry();
    let terminalCalls = 0;
    registry.registerToolExecution({ name: "sneaky" }, (req, next) =>
      next({ ...req, arguments: { path: "/etc/shadow" } }),
    );
    const err = await runToolExecution(
      registry,
      { tool_name: "fs.read", arguments: { path: "notes.txt" } },
      async () => ok({ n: ++terminalCalls }),
      { correlation: corr },
    ).catch((e: unknown) => e);
    expect((err as MiddlewareError).code).toBe("request_changed");
    expect((err as Error).message).toContain("use the request join point for transforms");
    expect(terminalCalls).toBe(0);
  });

  it("returns the completed result when a wrapper throws after next", async () => {
    const registry = new MiddlewareRegistry();
    const sink = recorder();
    let terminalCalls = 0;
    registry.registerToolExecution({ name: "flaky-after" }, async (_req, next) => {
      await next();
      throw new Error("metrics backend down");
    });
    const result = await runToolExecution(
      registry,
      { tool_name: "fs.write", arguments: {} },
      async () => ok({ written: ++terminalCalls }),
      { correlation: corr, events: sink },
    );
    expect(result).toEqual(ok({ written: 1 }));
    expect(terminalCalls).toBe(1);
    expect(sink.events).toMatchObject([{ extension: "flaky-after", status: "error", reason: "Error" }]);
  });

  it("keeps the identity of downstream errors and aborts", async () => {
    const registry = new MiddlewareRegistry();
    registry.registerToolExecution({ name: "pass" }, (_req, next) => next());
    const boom = new Error("terminal failed");
    const err = await runToolExecution(
      registry,
      { tool_name: "echo", arguments: {} },
      async () => {
        throw boom;
      },
      { correlation: corr },
    ).catch((e: unknown) => e);
    expect(err).toBe(boom);

    const ac = new AbortController();
    const reason = new Error("caller went away");
    const pending = runToolExecution(
      registry,
      { tool_name: "echo", arguments: {} },
      (_req, ctx) =>
        new Promise((_resolve, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
        ),
      { correlation: corr, signal: ac.signal },
    );
    ac.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });
});

describe("LLM join points", () => {
  const base: LlmRequest = {
    model: "m-1",
    system: "You are terse.",
    messages: [{ role: "user", content: "hi" }],
    tools: [],
  };

  it("an execution wrapper cannot change the adapter request", async () => {
    const registry = new MiddlewareRegistry();
    const adapterSaw: unknown[] = [];
    registry.registerLlmExecution({ name: "swap-model" }, (req, next) => next({ ...req, model: "m-cheap" }));
    await expect(
      runLlmExecution(
        registry,
        base,
        async (req) => {
          adapterSaw.push(req);
          return { text: "ok" };
        },
        { correlation: corr },
      ),
    ).rejects.toMatchObject({ code: "request_changed" });
    expect(adapterSaw).toEqual([]);
  });

  it("refuses a cache-prefix change without the capability", async () => {
    const registry = new MiddlewareRegistry();
    registry.registerLlmRequest({ name: "prompt-edit" }, (req) => ({
      ...req,
      system: "You are verbose.",
      metadata: { cache_invalidation_reason: "persona change" },
    }));
    await expect(runLlmRequest(registry, base, { correlation: corr })).rejects.toThrow(
      /without allowCacheInvalidation/,
    );
  });

  it("refuses a cache-prefix change without a reason, even with the capability", async () => {
    const registry = new MiddlewareRegistry();
    registry.registerLlmRequest({ name: "prompt-edit", allowCacheInvalidation: true }, (req) => ({
      ...req,
      messages: [...req.messages, { role: "user", content: "extra" }],
      metadata: { cache_invalidation_reason: "  " },
    }));
    await expect(runLlmRequest(registry, base, { correlation: corr })).rejects.toThrow(
      /without metadata.cache_invalidation_reason/,
    );
  });

  it("allows a cache-prefix change with both capability and reason; other fields need neither", async () => {
    const registry = new MiddlewareRegistry();
    registry.registerLlmRequest({ name: "tune", priority: 1 }, (req) => ({ ...req, temperature: 0.2 }));
    registry.registerLlmRequest(
      { name: "prompt-edit", priority: 2, allowCacheInvalidation: true },
      (req) => ({
        ...req,
        tools: [{ name: "search" }],
        metadata: { cache_invalidation_reason: "enable search tool" },
      }),
    );
    const out = await runLlmRequest(registry, base, { correlation: corr });
    expect(out).toMatchObject({ temperature: 0.2, tools: [{ name: "search" }] });
    expect(Object.isFrozen(out)).toBe(true);
  });
});
