import { requestJson } from "@geode/bus";
import { type EventEnvelope, type GeodeError, HookName } from "@geode/contracts";
import { waitFor } from "@geode/testing";
import { DeliverPolicy } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { CORRELATION, useHookFixture } from "./hooks-support.js";

const { env, hooks, scope } = useHookFixture();

/** Every `extension_invoked` event of one session stored in `{NS}_EVENTS` so far. */
async function storedEvents(sessionId: string): Promise<EventEnvelope[]> {
  const { js, names } = env();
  const consumer = await js.consumers.get(names.eventsStream, {
    deliver_policy: DeliverPolicy.All,
    filter_subjects: names.event("extension_invoked"),
  });
  const out: EventEnvelope[] = [];
  const info = await consumer.info(true);
  if (info.num_pending === 0) return out;
  const batch = await consumer.fetch({ max_messages: info.num_pending, expires: 2_000 });
  for await (const m of batch) {
    const e = m.json<EventEnvelope>();
    if (e.correlation.session_id === sessionId) out.push(e);
    if (m.info.pending === 0) break;
  }
  return out;
}

/** Waits until at least `n` events of the session are stored, then returns them. */
async function eventsAtLeast(sessionId: string, n: number): Promise<EventEnvelope[]> {
  let found: EventEnvelope[] = [];
  await waitFor(async () => {
    found = await storedEvents(sessionId);
    return found.length >= n;
  });
  return found;
}

describe("hook audit and wire hygiene", () => {
  it("stores one extension_invoked event per handler call, with no payload content", async () => {
    const secretInput = "my-very-private-prompt-text";
    await scope().serve(HookName.UserPromptSubmit, { name: "ok-one", priority: 1 }, () => null);
    await scope().serve(HookName.UserPromptSubmit, { name: "rewriter", priority: 2 }, () => ({
      action: "rewrite",
      updates: { user_input: `${secretInput} (edited)` },
    }));
    await scope().serve(HookName.UserPromptSubmit, { name: "broken", priority: 3 }, () => {
      throw new Error(`failed on ${secretInput}`);
    });
    await scope().serve(HookName.UserPromptSubmit, { name: "blocker", priority: 4 }, () => ({
      action: "block",
      reason: "policy says no; key sk-abcdefghijklmnopqrstuvwx",
    }));
    let neverCalls = 0;
    await scope().serve(HookName.UserPromptSubmit, { name: "never", priority: 5 }, () => {
      neverCalls++;
      return null;
    });
    const correlation = { ...CORRELATION, session_id: "audit-1" };
    const out = await hooks().invoke(HookName.UserPromptSubmit, { user_input: secretInput }, correlation);
    expect(out.blocked).toBe(true);

    const events = await eventsAtLeast("audit-1", 4);
    expect(events.map((e) => e.payload["extension"])).toEqual(["ok-one", "rewriter", "broken", "blocker"]);
    for (const e of events) {
      expect(e.event).toBe("extension_invoked");
      expect(e.source).toBe("hook-dispatcher");
      expect(e.correlation).toEqual(correlation);
      expect(Object.keys(e.payload).sort()).toEqual(
        ["duration_ms", "extension", "name", "reason", "status", "surface"].sort(),
      );
      expect(e.payload["surface"]).toBe("hook");
      expect(e.payload["name"]).toBe("UserPromptSubmit");
      expect(typeof e.payload["duration_ms"]).toBe("number");
      expect(JSON.stringify(e)).not.toContain("private-prompt");
    }
    expect(events.map((e) => [e.payload["status"], e.payload["reason"]])).toEqual([
      ["ok", ""],
      ["ok", ""],
      ["error", "HandlerError"],
      ["block", "policy says no; key [REDACTED]"],
    ]);
    // The handler after the block was never called, so it has no audit row.
    expect(neverCalls).toBe(0);
    expect(await storedEvents("audit-1")).toHaveLength(4);
  });

  it("audits a handler cut off by the caller's deadline as an error with only its type", async () => {
    let wake: () => void = () => undefined;
    const asleep = new Promise<null>((r) => {
      wake = () => r(null);
    });
    await scope().serve(HookName.Stop, { name: "dawdler", timeoutMs: 0 }, () => asleep);
    const correlation = { ...CORRELATION, session_id: "audit-2" };
    const payload = {
      passed: true,
      mode: "rule_based",
      score: 1,
      rubric_misses: [],
      termination_reason: "natural",
      rounds: 1,
      tool_call_count: 0,
      candidate_summary: "done",
      policy_action: "accept",
      evidence_refs: [],
    };
    const err = await hooks()
      .invoke(HookName.Stop, payload, correlation, { timeoutMs: 200 })
      .catch((e: unknown) => e);
    wake();
    expect((err as GeodeError).code).toBe("timeout");
    const events = await eventsAtLeast("audit-2", 1);
    expect(events.map((e) => [e.payload["extension"], e.payload["status"], e.payload["reason"]])).toEqual([
      ["dawdler", "error", "Timeout"],
    ]);
  });

  it("a caller's cancellation reaches the dispatcher: the chain stops and the running handler is audited Cancelled", async () => {
    let wake: () => void = () => undefined;
    const asleep = new Promise<null>((r) => {
      wake = () => r(null);
    });
    let slowCalled = false;
    let laterCalls = 0;
    await scope().serve(HookName.SessionEnd, { name: "slow", priority: 1, timeoutMs: 0 }, () => {
      slowCalled = true;
      return asleep;
    });
    await scope().serve(HookName.SessionEnd, { name: "later", priority: 2 }, () => {
      laterCalls++;
      return null;
    });
    const correlation = { ...CORRELATION, session_id: "audit-cancel" };
    const controller = new AbortController();
    const pending = hooks()
      .invoke(HookName.SessionEnd, { reason: "done", status: "completed" }, correlation, {
        signal: controller.signal,
      })
      .catch((e: unknown) => e);
    await waitFor(() => slowCalled);
    controller.abort(new Error("user pressed stop"));
    expect(((await pending) as Error).message).toBe("user pressed stop");
    const events = await eventsAtLeast("audit-cancel", 1);
    expect(events.map((e) => [e.payload["extension"], e.payload["status"], e.payload["reason"]])).toEqual([
      ["slow", "error", "Cancelled"],
    ]);
    // The slow handler answering now must not restart the chain: `later` is never called.
    wake();
    const probe = await hooks().invoke(
      HookName.SessionEnd,
      { reason: "again", status: "completed" },
      {
        ...CORRELATION,
        session_id: "audit-cancel-2",
      },
    );
    expect(probe.handler_errors).toEqual([]);
    expect(laterCalls).toBe(1); // only the probe invocation reached it
  });

  it("answers bad wire input with an error reply and keeps serving", async () => {
    const { nc, names } = env();
    const subject = names.hookInvoke(HookName.UserPromptSubmit);
    const raw = async (data: string | Uint8Array) => {
      const msg = await nc.request(subject, data, { timeout: 5_000 });
      return msg.json<{ error?: { code: string; message: string } }>();
    };
    expect((await raw("{not json")).error?.code).toBe("invalid_request");
    expect((await raw(new Uint8Array([0xff, 0xfe, 0x00]))).error?.code).toBe("invalid_request");
    expect((await raw("[1,2]")).error?.code).toBe("invalid_request");
    expect((await raw(JSON.stringify({ payload: "hi" }))).error?.code).toBe("invalid_request");
    expect(
      (await raw(JSON.stringify({ payload: { user_input: "x" }, correlation: { who: "me" } }))).error?.code,
    ).toBe("invalid_request");
    expect((await raw(JSON.stringify({ payload: { user_input: "x" }, timeout_ms: -5 }))).error?.code).toBe(
      "invalid_request",
    );
    expect((await raw(JSON.stringify({ payload: { user_input: 7 } }))).error?.code).toBe("invalid_payload");
    const lowercase = await requestJson(
      nc,
      names.hookInvoke("userpromptsubmit"),
      { payload: {} },
      {
        timeoutMs: 5_000,
      },
    ).catch((e: unknown) => e);
    expect((lowercase as GeodeError).code).toBe("unknown_hook");

    // Still serving, with correlation defaults filled in.
    const out = await hooks().invoke(HookName.UserPromptSubmit, { user_input: "still here" });
    expect(out.payload).toEqual({ user_input: "still here" });
    expect(out.correlation.session_id).toBe("");
    expect(out.correlation.session_generation).toBe(0);
  });
});
