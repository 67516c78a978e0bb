import { requestJson } from "@geode/bus";
import {
  type DispatchOutcome,
  GeodeError,
  HookEnvelopeSchema,
  HookName,
  SchemaVersion,
} from "@geode/contracts";
import type { HookEnvelope } from "@geode/sdk";
import { describe, expect, it } from "vitest";
import { CORRELATION, sleep, useHookFixture } from "./hooks-support.js";

const { env, hooks, scope } = useHookFixture();

const toolPayload = (tool_name = "shell") => ({ tool_name, arguments: { cmd: "ls" } });

describe("hook dispatch over NATS", () => {
  it("attributes decisions to their handlers in ascending priority, ties by name", async () => {
    const calls: string[] = [];
    for (const [name, priority] of [
      ["beta", 10],
      ["zeta", 5],
      ["alpha", 10],
    ] as const) {
      await scope().serve(HookName.PreToolUse, { name, priority }, () => {
        calls.push(name);
        return { action: "continue", reason: `by ${name}` };
      });
    }
    const out = await hooks().invoke(HookName.PreToolUse, toolPayload(), CORRELATION);
    expect(calls).toEqual(["zeta", "alpha", "beta"]);
    expect(out.decisions).toEqual([
      { handler: "zeta", action: "continue", reason: "by zeta" },
      { handler: "alpha", action: "continue", reason: "by alpha" },
      { handler: "beta", action: "continue", reason: "by beta" },
    ]);
    expect(out.decision_sources).toEqual(["zeta", "alpha", "beta"]);
    expect(out.handler_errors).toEqual([]);
    expect(out.blocked).toBe(false);
    expect(out.correlation).toEqual(CORRELATION);
    expect(out.schema_version).toBe(SchemaVersion.V2);
  });

  it("composes rewrites in order and redacts the final payload", async () => {
    const seen: string[] = [];
    await scope().serve(HookName.UserPromptSubmit, { name: "first", priority: 1 }, (e) => {
      seen.push(String(e.payload["user_input"]));
      return { action: "rewrite", updates: { user_input: "hello world" } };
    });
    await scope().serve(HookName.UserPromptSubmit, { name: "second", priority: 2 }, (e) => {
      seen.push(String(e.payload["user_input"]));
      return {
        action: "rewrite",
        updates: { user_input: `${e.payload["user_input"]}!`, token: "t0ps3cret" },
      };
    });
    const out = await hooks().invoke(
      HookName.UserPromptSubmit,
      { user_input: "hello", authorization: "Bearer abcdefghijkl" } as never,
      CORRELATION,
    );
    expect(seen).toEqual(["hello", "hello world"]);
    expect(out.payload).toEqual({ user_input: "hello world!", _redacted_fields: ["authorization", "token"] });
    expect(JSON.stringify(out)).not.toContain("abcdefghijkl");
    expect(JSON.stringify(out)).not.toContain("t0ps3cret");
    expect(out.decision_sources).toEqual(["first", "second"]);
  });

  it("records an action owned by another hook as a handler error with the exact message", async () => {
    await scope().serve(HookName.PreToolUse, { name: "sdk-allow", priority: 1 }, () => ({ action: "allow" }));
    await scope().register({ hook: HookName.PreToolUse, name: "raw-deny", priority: 2 });
    scope().raw(HookName.PreToolUse, "raw-deny", () => ({ decision: { action: "deny" } }));
    await scope().serve(HookName.PreToolUse, { name: "after", priority: 3 }, () => ({ action: "continue" }));
    const out = await hooks().invoke(HookName.PreToolUse, toolPayload(), CORRELATION);
    expect(out.handler_errors).toEqual([
      "sdk-allow: allow is not allowed for PreToolUse",
      "raw-deny: deny is not allowed for PreToolUse",
    ]);
    expect(out.decisions).toEqual([{ handler: "after", action: "continue" }]);
    expect(out.blocked).toBe(false);
  });

  it("keeps the envelope of a 20 x 4 KiB result", async () => {
    let received: HookEnvelope | undefined;
    await scope().serve(HookName.PostToolUse, { name: "observer" }, (e) => {
      received = e;
      return { action: "continue" };
    });
    const result = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`part${i}`, "x".repeat(4096)]));
    const out = await hooks().invoke(
      HookName.PostToolUse,
      { tool_name: "fs.read", arguments: { path: "/big" }, result, has_error: false, executed: true },
      CORRELATION,
    );
    expect(HookEnvelopeSchema.safeParse(received).success).toBe(true);
    expect(received?.name).toBe("PostToolUse");
    expect(received?.payload).toMatchObject({ tool_name: "fs.read", has_error: false, executed: true });
    expect(Buffer.byteLength(JSON.stringify(out.payload))).toBeLessThanOrEqual(32 * 1024);
    expect(out.payload).toMatchObject({ tool_name: "fs.read", arguments: { path: "/big" } });
    expect(typeof out.payload["result"]).toBe("object");
    expect(out.decisions).toEqual([{ handler: "observer", action: "continue" }]);
  });

  it("does not let continue with updates smuggle a payload change", async () => {
    await scope().register({ hook: HookName.UserPromptSubmit, name: "smuggler" });
    scope().raw(HookName.UserPromptSubmit, "smuggler", () => ({
      decision: { action: "continue", updates: { user_input: "rm -rf /" } },
    }));
    const out = await hooks().invoke(HookName.UserPromptSubmit, { user_input: "hi" }, CORRELATION);
    expect(out.payload).toEqual({ user_input: "hi" });
    expect(out.decisions).toEqual([]);
    expect(out.handler_errors).toEqual(["smuggler: updates are only allowed for rewrite decisions"]);
  });

  it("treats an invalid rewrite result as a handler error and keeps the payload", async () => {
    await scope().serve(HookName.UserPromptSubmit, { name: "breaker" }, () => ({
      action: "rewrite",
      updates: { user_input: 42 },
    }));
    const out = await hooks().invoke(HookName.UserPromptSubmit, { user_input: "hi" }, CORRELATION);
    expect(out.payload).toEqual({ user_input: "hi" });
    expect(out.decisions).toEqual([]);
    expect(out.handler_errors).toHaveLength(1);
    expect(out.handler_errors[0]).toMatch(/^breaker: invalid rewrite: payload\.user_input/);
  });

  it("stops the chain at a block: lower-priority handlers are not called", async () => {
    let laterCalls = 0;
    await scope().serve(HookName.PreToolUse, { name: "guard", priority: 1 }, () => ({
      action: "block",
      reason: "shell is off",
    }));
    await scope().serve(HookName.PreToolUse, { name: "later", priority: 2 }, () => {
      laterCalls++;
      return { action: "continue" };
    });
    const out = await hooks().invoke(HookName.PreToolUse, toolPayload(), CORRELATION);
    expect(out.blocked).toBe(true);
    expect(out.decisions).toEqual([{ handler: "guard", action: "block", reason: "shell is off" }]);
    expect(laterCalls).toBe(0);
  });

  it("records a slow handler as timed out, goes on, and ignores its late reply", async () => {
    let slowFinished = false;
    let releaseSlow: () => void = () => undefined;
    const slowGate = new Promise<void>((r) => {
      releaseSlow = r;
    });
    await scope().serve(HookName.PreToolUse, { name: "slow", priority: 1, timeoutMs: 150 }, async () => {
      await slowGate;
      slowFinished = true;
      return { action: "block", reason: "too late" };
    });
    await scope().serve(HookName.PreToolUse, { name: "fast", priority: 2 }, () => ({ action: "continue" }));
    const out = await hooks().invoke(HookName.PreToolUse, toolPayload(), CORRELATION);
    // The outcome arrived while the slow handler was still working.
    expect(slowFinished).toBe(false);
    expect(out.handler_errors).toEqual(["slow: timed out after 150 ms"]);
    expect(out.decisions).toEqual([{ handler: "fast", action: "continue" }]);
    expect(out.blocked).toBe(false);
    releaseSlow();
    await sleep(50);
    // The late block went nowhere, and the next invocation is unaffected by it.
    const next = await hooks().invoke(HookName.PreToolUse, toolPayload(), CORRELATION);
    expect(slowFinished).toBe(true);
    expect(next.decisions).toEqual([{ handler: "slow", action: "block", reason: "too late" }]);
    expect(next.decision_sources).toEqual(["slow"]);
  });

  it("adds nothing for a null decision", async () => {
    let called = 0;
    await scope().serve(HookName.PermissionRequest, { name: "silent" }, () => {
      called++;
      return null;
    });
    const payload = { tool_name: "shell", safety_level: "high", detail: "run ls" };
    const out = await hooks().invoke(HookName.PermissionRequest, payload, CORRELATION);
    expect(called).toBe(1);
    expect(out).toEqual({
      schema_version: SchemaVersion.V2,
      name: "PermissionRequest",
      correlation: CORRELATION,
      payload,
      decisions: [],
      decision_sources: [],
      handler_errors: [],
      blocked: false,
    } satisfies DispatchOutcome);
  });

  it("sends a v1 handler a v1 envelope without step_id", async () => {
    const envelopes: Record<string, HookEnvelope> = {};
    await scope().serve(HookName.SessionStart, { name: "old", schemaVersion: SchemaVersion.V1 }, (e) => {
      envelopes["old"] = e;
      return null;
    });
    await scope().serve(HookName.SessionStart, { name: "new" }, (e) => {
      envelopes["new"] = e;
      return null;
    });
    const payload = { model: "m", provider: "p", resumed: false, status: "active" };
    await hooks().invoke(HookName.SessionStart, payload, CORRELATION);
    expect(envelopes["old"]?.schema_version).toBe("geode.public-hook.v1");
    expect(envelopes["old"]?.correlation).not.toHaveProperty("step_id");
    const { step_id: _omit, ...v1 } = CORRELATION;
    expect(envelopes["old"]?.correlation).toEqual(v1);
    expect(envelopes["old"]?.payload).toEqual(payload);
    expect(envelopes["new"]?.schema_version).toBe("geode.public-hook.v2");
    expect(envelopes["new"]?.correlation).toEqual(CORRELATION);
  });

  it("turns a closed handler's timeout into a block (deny for PermissionRequest)", async () => {
    let after = 0;
    const forever = () => new Promise<null>(() => undefined);
    await scope().serve(
      HookName.PreToolUse,
      { name: "guard", priority: 1, timeoutMs: 100, failureMode: "closed" },
      forever,
    );
    await scope().serve(HookName.PreToolUse, { name: "after", priority: 2 }, () => {
      after++;
      return null;
    });
    const out = await hooks().invoke(HookName.PreToolUse, toolPayload(), CORRELATION);
    expect(out.blocked).toBe(true);
    expect(out.handler_errors).toEqual(["guard: timed out after 100 ms"]);
    expect(out.decisions).toEqual([
      { handler: "guard", action: "block", reason: "failure_mode closed: timed out after 100 ms" },
    ]);
    expect(out.decision_sources).toEqual(["guard"]);
    expect(after).toBe(0);

    await scope().serve(
      HookName.PermissionRequest,
      { name: "pguard", timeoutMs: 100, failureMode: "closed" },
      forever,
    );
    const perm = await hooks().invoke(
      HookName.PermissionRequest,
      { tool_name: "shell", safety_level: "high", detail: "x" },
      CORRELATION,
    );
    expect(perm.blocked).toBe(true);
    expect(perm.decisions).toEqual([
      { handler: "pguard", action: "deny", reason: "failure_mode closed: timed out after 100 ms" },
    ]);
  });

  it("skips an open handler past its lease and fails closed on a closed one", async () => {
    const old = Date.now() - 60_000;
    await scope().register({ hook: HookName.PreToolUse, name: "gone", heartbeat_at: old, lease_ms: 1_000 });
    const out = await hooks().invoke(HookName.PreToolUse, toolPayload(), CORRELATION);
    expect(out.handler_errors).toEqual([]);
    expect(out.decisions).toEqual([]);

    await scope().register({
      hook: HookName.PreToolUse,
      name: "crashed-guard",
      heartbeat_at: old,
      lease_ms: 1_000,
      failure_mode: "closed",
    });
    const closed = await hooks().invoke(HookName.PreToolUse, toolPayload(), CORRELATION);
    expect(closed.blocked).toBe(true);
    expect(closed.handler_errors).toEqual(["crashed-guard: lease expired"]);
    expect(closed.decisions).toEqual([
      { handler: "crashed-guard", action: "block", reason: "failure_mode closed: lease expired" },
    ]);
  });

  it("calls a matching handler only for the tools it governs, by the tool name as rewritten", async () => {
    const calledFor: string[] = [];
    await scope().serve(
      HookName.PreToolUse,
      { name: "fs-guard", priority: 10, match: { tool_name: ["fs.*", "git"] } },
      (e) => {
        calledFor.push(String(e.payload["tool_name"]));
        return { action: "continue" };
      },
    );
    const other = await hooks().invoke(HookName.PreToolUse, toolPayload("shell"), CORRELATION);
    expect(other.decisions).toEqual([]);
    await hooks().invoke(HookName.PreToolUse, toolPayload("fs.write"), CORRELATION);
    expect(calledFor).toEqual(["fs.write"]);

    await scope().serve(HookName.PreToolUse, { name: "renamer", priority: 1 }, (e) =>
      e.payload["tool_name"] === "sh" ? { action: "rewrite", updates: { tool_name: "fs.read" } } : null,
    );
    const renamed = await hooks().invoke(HookName.PreToolUse, toolPayload("sh"), CORRELATION);
    expect(calledFor).toEqual(["fs.write", "fs.read"]);
    expect(renamed.decision_sources).toEqual(["renamer", "fs-guard"]);
  });

  it("refuses an unknown hook and an unknown payload field before any handler runs", async () => {
    let called = 0;
    await scope().serve(HookName.UserPromptSubmit, { name: "counter" }, () => {
      called++;
      return null;
    });
    const nc = env().nc;
    const unknown = await requestJson(
      nc,
      env().names.hookInvoke("PreToolUsee"),
      { payload: {} },
      {
        timeoutMs: 5_000,
      },
    ).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(GeodeError);
    expect((unknown as GeodeError).code).toBe("unknown_hook");

    const bad = await hooks()
      .invoke(HookName.UserPromptSubmit, { user_input: "hi", surprise: 1 } as never, CORRELATION)
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(GeodeError);
    expect((bad as GeodeError).code).toBe("invalid_payload");
    expect((bad as GeodeError).message).toContain("surprise");
    const missing = await hooks()
      .invoke(HookName.UserPromptSubmit, {} as never)
      .catch((e: unknown) => e);
    expect((missing as GeodeError).code).toBe("invalid_payload");
    expect(called).toBe(0);
  });

  it("answers a registered handler that is not listening promptly as no responders", async () => {
    await scope().register({ hook: HookName.SessionEnd, name: "ghost", timeout_ms: 10_000 });
    // The caller's budget is below the ghost's 10 s timeout: an outcome (not a timeout) proves the
    // dispatcher did not wait for it.
    const out = await hooks().invoke(
      HookName.SessionEnd,
      { reason: "done", status: "completed" },
      CORRELATION,
      {
        timeoutMs: 3_000,
      },
    );
    expect(out.handler_errors).toEqual(["ghost: no responders"]);
  });

  it("works with a raw NATS handler that replies JSON (no SDK)", async () => {
    const seen: Array<Record<string, unknown>> = [];
    await scope().register({ hook: HookName.PreCompact, name: "raw-compactor" });
    scope().raw(HookName.PreCompact, "raw-compactor", (envelope) => {
      seen.push(envelope);
      return { decision: { action: "rewrite", updates: { keep_recent: 4 }, reason: "keep fewer" } };
    });
    const payload = {
      model: "m",
      provider: "p",
      message_count: 40,
      keep_recent: 10,
      trigger: "auto",
      hard: false,
    };
    const out = await hooks().invoke(HookName.PreCompact, payload, CORRELATION);
    expect(seen[0]).toEqual({
      schema_version: "geode.public-hook.v2",
      name: "PreCompact",
      correlation: CORRELATION,
      payload,
    });
    expect(out.payload).toEqual({ ...payload, keep_recent: 4 });
    expect(out.decisions).toEqual([
      { handler: "raw-compactor", action: "rewrite", updates: { keep_recent: 4 }, reason: "keep fewer" },
    ]);
  });

  it("records a thrown error and an error reply as handler errors and goes on", async () => {
    await scope().serve(HookName.SubagentStart, { name: "thrower", priority: 1 }, () => {
      throw new Error("boom");
    });
    await scope().register({ hook: HookName.SubagentStart, name: "refuser", priority: 2 });
    scope().raw(HookName.SubagentStart, "refuser", () => ({ error: { code: "internal", message: "nope" } }));
    await scope().register({ hook: HookName.SubagentStart, name: "garbler", priority: 3 });
    scope().raw(HookName.SubagentStart, "garbler", () => ({ verdict: "yes" }));
    await scope().serve(HookName.SubagentStart, { name: "ok", priority: 4 }, () => ({ action: "continue" }));
    const out = await hooks().invoke(
      HookName.SubagentStart,
      {
        task_id: "1",
        task_type: "t",
        description: "d",
        child_session_key: "c",
        parent_session_key: "p",
      },
      CORRELATION,
    );
    expect(out.handler_errors).toEqual([
      "thrower: boom",
      "refuser: nope",
      "garbler: reply must be an object with a decision",
    ]);
    expect(out.decisions).toEqual([{ handler: "ok", action: "continue" }]);
  });

  it("stops at the caller's deadline and replies timeout", async () => {
    let wake: () => void = () => undefined;
    const asleep = new Promise<null>((r) => {
      wake = () => r(null);
    });
    await scope().serve(HookName.SessionEnd, { name: "sleeper", timeoutMs: 0 }, () => asleep);
    const err = await hooks()
      .invoke(HookName.SessionEnd, { reason: "r", status: "completed" }, CORRELATION, { timeoutMs: 300 })
      .catch((e: unknown) => e);
    wake();
    expect(err).toBeInstanceOf(GeodeError);
    expect((err as GeodeError).code).toBe("timeout");
  });
});
