/**
 * The lifecycle's rules on a real sessions bucket, with the hook-dispatcher replaced by a script
 * (the real one runs under test/sessions-lifecycle.test.ts and the gateway tests).
 */
import { randomUUID } from "node:crypto";
import { encodeJson, type HookClient, RuntimeEventBus } from "@geode/bus";
import type { ApprovalRequest, EventEnvelope, HookName, TimelineRecord } from "@geode/contracts";
import { SessionStore } from "@geode/state";
import { scriptedOutcome, useTestEnv } from "@geode/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { requestApproval } from "./approval.js";
import type { LifecycleDeps } from "./lifecycle-deps.js";
import { decidePermission } from "./permission.js";
import { endSession, startSession } from "./session-lifecycle.js";
import { startSubagent, stopSubagent } from "./subagent-lifecycle.js";

const env = useTestEnv();
let deps: LifecycleDeps;
let store: SessionStore;
const invoked: Array<{ hook: HookName; payload: unknown; session: string }> = [];
const seen: Array<EventEnvelope | TimelineRecord> = [];

beforeAll(async () => {
  const hooks: HookClient = {
    async invoke(hook, payload, correlation) {
      invoked.push({ hook, payload, session: correlation?.session_id ?? "" });
      return scriptedOutcome(hook, payload as Record<string, unknown>);
    },
  };
  const events = await RuntimeEventBus.create({ nc: env().nc, names: env().names, source: "lifecycle-test" });
  events.subscribe((e) => void seen.push(e));
  events.subscribeTimeline((r) => void seen.push(r));
  store = await SessionStore.open(env());
  deps = { hooks, events, sessions: store };
});

const hooksOf = (session: string) => invoked.filter((i) => i.session === session).map((i) => i.hook);
const namesOf = (session: string) =>
  seen.filter((e) => e.correlation.session_id === session).map((e) => ("event" in e ? e.event : e.kind));

describe("startSession", () => {
  it("creates a session once; `refuse` refuses it again, `resume` makes a new generation", async () => {
    const id = randomUUID();
    const first = await startSession(deps, { session_id: id, model: "m1", provider: "p", resume: "refuse" });
    expect(first).toMatchObject({
      change: "created",
      record: { generation: 0, model: "m1", status: "active" },
    });
    await expect(
      startSession(deps, { session_id: id, provider: "p", resume: "refuse" }),
    ).rejects.toMatchObject({
      code: "invalid_request",
    });
    const again = await startSession(deps, { session_id: id, model: "m2", provider: "p", resume: "resume" });
    expect(again).toMatchObject({ change: "resumed", record: { generation: 1, model: "m2" } });
    expect(again.correlation.session_generation).toBe(1);
    expect(hooksOf(id)).toEqual(["SessionStart", "SessionStart"]);
    expect(namesOf(id)).toEqual(["session_started", "session.started", "session_started", "session.started"]);
  });

  it("`if-ended` keeps a live session (recording a new model as a switch) and resumes an ended one", async () => {
    const id = randomUUID();
    await startSession(deps, {
      session_id: id,
      provider: "p",
      resume: "if-ended",
      facts: { agent_kind: "codex" },
    });
    const same = await startSession(deps, { session_id: id, provider: "p", resume: "if-ended" });
    expect(same.change).toBe("unchanged");
    const switched = await startSession(deps, {
      session_id: id,
      model: "gpt-x",
      provider: "p",
      resume: "if-ended",
    });
    expect(switched).toMatchObject({ change: "model_switched", record: { generation: 0, model: "gpt-x" } });
    await endSession(deps, { session_id: id, status: "completed", reason: "done" });
    const resumed = await startSession(deps, { session_id: id, provider: "p", resume: "if-ended" });
    expect(resumed).toMatchObject({
      change: "resumed",
      record: { generation: 1, status: "active", model: "gpt-x" },
    });
    expect(namesOf(id)).toEqual([
      "session_started",
      "session.started",
      "model_switched",
      "session_ended",
      "session.ended",
      "session_started",
      "session.started",
    ]);
    const started = seen.find(
      (e) => "event" in e && e.event === "session_started" && e.correlation.session_id === id,
    );
    expect(started?.payload).toMatchObject({ agent_kind: "codex", resumed: false, generation: 0 });
  });

  it("a resumed session keeps a parked verification parked", async () => {
    const id = randomUUID();
    await startSession(deps, { session_id: id, provider: "p", resume: "refuse" });
    await store.pause({ session_id: id, session_generation: 0 });
    const resumed = await startSession(deps, { session_id: id, provider: "p", resume: "resume" });
    expect(resumed.record).toMatchObject({
      status: "paused",
      reason: "external_verification_required",
      generation: 1,
    });
  });
});

describe("endSession", () => {
  it("ends once: only the winning call fires SessionEnd; an unknown session is refused unless ifExists", async () => {
    const id = randomUUID();
    await startSession(deps, { session_id: id, provider: "p", resume: "refuse" });
    const ends = await Promise.all(
      [1, 2, 3].map(() => endSession(deps, { session_id: id, status: "completed", reason: "bye" })),
    );
    expect(ends.filter((e) => e.ended)).toHaveLength(1);
    expect(hooksOf(id).filter((h) => h === "SessionEnd")).toHaveLength(1);
    await expect(
      endSession(deps, { session_id: randomUUID(), status: "error", reason: "x" }),
    ).rejects.toMatchObject({
      code: "invalid_request",
    });
    expect(
      (await endSession(deps, { session_id: randomUUID(), status: "error", reason: "x", ifExists: true }))
        .ended,
    ).toBe(false);
  });
});

describe("sub-agents", () => {
  it("`new` refuses a known child, `ensure` keeps it; a stop fires once", async () => {
    const parent = randomUUID();
    const child = `${parent}-t1`;
    const started = await startSubagent(deps, {
      task_id: "t1",
      task_type: "research",
      description: "look around",
      parent_session_id: parent,
      child: "new",
    });
    expect(started.child_session_id).toBe(child);
    expect(await store.get(child)).toMatchObject({ status: "active" });
    await expect(
      startSubagent(deps, {
        task_id: "t1",
        task_type: "r",
        description: "",
        parent_session_id: parent,
        child: "new",
      }),
    ).rejects.toMatchObject({ code: "invalid_request" });
    const ensured = await startSubagent(deps, {
      task_id: "t1",
      task_type: "r",
      description: "",
      parent_session_id: parent,
      child: "ensure",
    });
    expect(ensured.child_session_id).toBe(child);
    const stops = await Promise.all(
      [1, 2].map(() => stopSubagent(deps, started, { success: false, error: "boom", duration_ms: 5 })),
    );
    expect(stops.filter((s) => s.stopped)).toHaveLength(1);
    expect(await store.get(child)).toMatchObject({ status: "error" });
    expect(namesOf(parent).filter((n) => n.startsWith("subagent"))).toEqual([
      "subagent_started",
      "subagent.started",
      "subagent_started",
      "subagent.started",
      "subagent_failed",
      "subagent.stopped",
    ]);
    // The description reaches SubagentStart handlers only, never an event or the timeline.
    expect(JSON.stringify(seen)).not.toContain("look around");
  });
});

describe("decidePermission", () => {
  const question = () => ({
    tool_name: "shell",
    safety_level: "mutation",
    args: { command: "deploy", token: "sk-live-0123456789abcdefghij" },
    correlation: { ...scriptedOutcome("PreToolUse" as HookName, {}).correlation, session_id: randomUUID() },
  });

  it("a handler's deny or allow decides; nobody deciding and no approver is `none`", async () => {
    const details: string[] = [];
    const base = {
      events: deps.events,
      approvalTimeoutMs: 500,
      approve: (r: ApprovalRequest, o: { timeoutMs: number }) => requestApproval(env(), r, o),
    };
    const answer = (decisions: Array<{ handler: string; action: string; reason?: string }>) => ({
      ...base,
      invoke: async (payload: { detail: string }) => {
        details.push(payload.detail);
        return scriptedOutcome("PermissionRequest" as HookName, payload, decisions as never);
      },
    });
    expect(
      await decidePermission(answer([{ handler: "g", action: "deny", reason: "no" }]), question()),
    ).toEqual({
      behavior: "deny",
      reason: "g: no",
      decided_by: "handler",
    });
    expect(await decidePermission(answer([{ handler: "g", action: "allow" }]), question())).toMatchObject({
      behavior: "allow",
      decided_by: "handler",
    });
    expect(await decidePermission(answer([]), question())).toEqual({
      behavior: "none",
      reason: "no approver available",
    });
    // Approvers and handlers read a bounded, secret-masked description.
    for (const d of details) expect(d).not.toContain("sk-live-0123456789");
  });

  it("`ask` goes to a human approver, whose verdict decides", async () => {
    const sub = env().nc.subscribe(env().names.approvalRequest, {
      queue: "approvers",
      callback: (_err, m) => {
        m.respond(encodeJson({ decision: "deny", approver: "alice", reason: "not today" }));
      },
    });
    try {
      const verdict = await decidePermission(
        {
          events: deps.events,
          approvalTimeoutMs: 2_000,
          approve: (r, o) => requestApproval(env(), r, o),
          invoke: async (payload) =>
            scriptedOutcome("PermissionRequest" as HookName, payload, [
              { handler: "g", action: "ask" },
            ] as never),
        },
        question(),
      );
      expect(verdict).toEqual({
        behavior: "deny",
        reason: "approval denied by alice: not today",
        decided_by: "approver",
      });
    } finally {
      sub.unsubscribe();
    }
  });
});
