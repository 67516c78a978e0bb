import { ensureBucket, RuntimeEventBus } from "@geode/bus";
import { GeodeError, HookName } from "@geode/contracts";
import { type HookDispatcher, startHookDispatcher } from "@geode/hook-dispatcher";
import { createHookClient } from "@geode/runtime";
import { type GeodeConnection, serveHook } from "@geode/sdk";
import { useTestEnv, waitFor } from "@geode/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CORRELATION, HandlerScope, sleep } from "./hooks-support.js";

const env = useTestEnv();
const dispatchers: HookDispatcher[] = [];
const served = [0, 0];
let scope: HandlerScope;

beforeAll(async () => {
  // Two replicas on their own connections; each counts the handler calls it audited.
  for (const i of [0, 1]) {
    const nc = await env().connect(`dispatcher-${i}`);
    const events = await RuntimeEventBus.create({ nc, names: env().names, source: "hook-dispatcher" });
    events.subscribe(() => {
      served[i] = (served[i] ?? 0) + 1;
    });
    dispatchers.push(await startHookDispatcher({ nc, names: env().names, events }));
  }
  scope = new HandlerScope(env(), dispatchers);
});
afterEach(async () => {
  await scope.close();
});
afterAll(async () => {
  for (const d of dispatchers) await d.stop();
});

const hooksOf = () => createHookClient(env().nc, env().names);
const prompt = (i: number) => ({ user_input: `prompt ${i}` });

describe("replicas", () => {
  it("shares invocations between two dispatcher replicas", async () => {
    await scope.serve(HookName.UserPromptSubmit, { name: "counter" }, () => ({ action: "continue" }));
    served[0] = 0;
    served[1] = 0;
    const hooks = hooksOf();
    const outcomes = await Promise.all(
      Array.from({ length: 60 }, (_, i) => hooks.invoke(HookName.UserPromptSubmit, prompt(i), CORRELATION)),
    );
    expect(outcomes.every((o) => o.decision_sources.join() === "counter")).toBe(true);
    expect(served[0]).toBeGreaterThan(0);
    expect(served[1]).toBeGreaterThan(0);
    expect((served[0] ?? 0) + (served[1] ?? 0)).toBe(60);
  });

  it("loses no invocation while one handler replica drains and another stays live", async () => {
    const replicaConn = async (name: string): Promise<GeodeConnection> => ({
      nc: await env().connect(name),
      names: env().names,
    });
    const calls = { a: 0, b: 0 };
    const handler = (who: "a" | "b") => async () => {
      calls[who]++;
      await sleep(2);
      return { action: "continue" as const, reason: "seen" };
    };
    const a = await serveHook(
      await replicaConn("replica-a"),
      HookName.PreCompact,
      { name: "keeper" },
      handler("a"),
    );
    const b = await scope.serve(
      HookName.PreCompact,
      { name: "keeper" },
      handler("b"),
      await replicaConn("replica-b"),
    );
    const hooks = hooksOf();
    const payload = {
      model: "m",
      provider: "p",
      message_count: 9,
      keep_recent: 3,
      trigger: "auto",
      hard: false,
    };
    let stop = false;
    const results: Array<{ errors: string[]; sources: string[] }> = [];
    const callers = Array.from({ length: 4 }, async () => {
      while (!stop) {
        const o = await hooks.invoke(HookName.PreCompact, payload, CORRELATION);
        results.push({ errors: o.handler_errors, sources: o.decision_sources });
      }
    });
    await waitFor(() => calls.a > 10 && calls.b > 10);
    await a.close();
    const afterClose = results.length;
    await waitFor(() => results.length > afterClose + 40);
    stop = true;
    await Promise.all(callers);
    expect(results.filter((r) => r.errors.length > 0 || r.sources.join() !== "keeper")).toEqual([]);
    // The live replica kept the registration.
    const kv = await ensureBucket(env().nc, env().names, "hookHandlers");
    expect((await kv.get("PreCompact.keeper"))?.operation).toBe("PUT");
    // The last replica's close deletes it.
    await b.close();
    expect((await kv.get("PreCompact.keeper"))?.operation).not.toBe("PUT");
  });

  it("refuses a conflicting duplicate registration and accepts a same-config replica", async () => {
    const conn = { nc: env().nc, names: env().names };
    const first = await scope.serve(
      HookName.PostCompact,
      { name: "dup", priority: 5, timeoutMs: 500 },
      () => null,
    );
    for (const changed of [{ priority: 6 }, { timeoutMs: 600 }, { failureMode: "closed" as const }]) {
      const err = await serveHook(
        conn,
        HookName.PostCompact,
        { name: "dup", priority: 5, timeoutMs: 500, ...changed },
        () => null,
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GeodeError);
      expect((err as GeodeError).code).toBe("duplicate_handler");
    }
    const replica = await serveHook(
      conn,
      HookName.PostCompact,
      { name: "dup", priority: 5, timeoutMs: 500 },
      () => null,
    );
    await replica.close();
    await first.close();
  });

  it("refuses unknown hooks, wildcards and bad names before registering", async () => {
    const conn = { nc: env().nc, names: env().names };
    const attempt = (hook: string, name: string, extra: object = {}) =>
      serveHook(conn, hook as HookName, { name, ...extra }, () => null).then(
        () => "registered",
        (e: unknown) => (e as GeodeError).code,
      );
    expect(await attempt("PreToolUsee", "x")).toBe("unknown_hook");
    expect(await attempt("*", "x")).toBe("invalid_request");
    expect(await attempt(">", "x")).toBe("invalid_request");
    expect(await attempt("PreToolUse", "*")).toBe("invalid_request");
    expect(await attempt("PreToolUse", "has space")).toBe("invalid_request");
    expect(await attempt("PreToolUse", "a.b")).toBe("invalid_request");
    expect(await attempt("PreToolUse", "x".repeat(65))).toBe("invalid_request");
    expect(await attempt("SessionEnd", "m", { match: { tool_name: ["fs.*"] } })).toBe("invalid_request");
    const kv = await ensureBucket(env().nc, env().names, "hookHandlers");
    const keys: string[] = [];
    for await (const k of await kv.keys()) keys.push(k);
    expect(keys).toEqual([]);
  });
});
