import { HookName, type SessionRecord, SessionRecordSchema } from "@geode/contracts";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import {
  createCompactor,
  createSessions,
  createSubagents,
  createVerifyClient,
  type Sessions,
} from "@geode/runtime";
import { useTestEnv, waitFor } from "@geode/testing";
import { type RunningVerifier, startVerifier } from "@geode/verifier";
import { Kvm } from "@nats-io/kv";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { HandlerScope, startDispatcher } from "./hooks-support.js";
import { candidate, eventsOf, timelineOf } from "./verify-support.js";

const env = useTestEnv();
let dispatcher: HookDispatcher;
let scope: HandlerScope;
let sessions: Sessions;

beforeAll(async () => {
  dispatcher = await startDispatcher(env());
  scope = new HandlerScope(env(), [dispatcher]);
  sessions = createSessions({ nc: env().nc, names: env().names });
});
afterEach(async () => {
  await scope.close();
});
afterAll(async () => {
  await dispatcher?.stop();
});

let seq = 0;
const newSessionId = () => `sess-${Date.now().toString(36)}-${seq++}`;

/** Reads a session record straight from KV, as a handler in another process would. */
async function readSession(sessionId: string): Promise<SessionRecord | null> {
  const kv = await new Kvm(env().nc).open(env().names.buckets.sessions);
  const e = await kv.get(env().names.sessionKey(sessionId));
  return e && e.operation === "PUT" ? SessionRecordSchema.parse(e.json()) : null;
}

const kindsOf = async (sessionId: string) =>
  (await timelineOf(env().jsm, env().names.timelineStream))
    .filter((r) => r.correlation.session_id === sessionId)
    .map((r) => r.kind);

describe("sessions", () => {
  it("SessionStart runs only after the session record is durable; a resume bumps the generation", async () => {
    const seenByHandler: { record: SessionRecord | null; payload: Record<string, unknown> }[] = [];
    await scope.serve(HookName.SessionStart, { name: "reader" }, async (envelope) => {
      seenByHandler.push({
        record: await readSession(envelope.correlation.session_id),
        payload: envelope.payload,
      });
      return null;
    });
    const id = newSessionId();
    const first = await sessions.start({ session_id: id, model: "m-1", provider: "p-1" });
    expect(first).toMatchObject({ resumed: false, record: { status: "active", generation: 0 } });
    expect(seenByHandler[0]?.record).toMatchObject({ status: "active", generation: 0, model: "m-1" });
    expect(seenByHandler[0]?.payload).toMatchObject({
      model: "m-1",
      provider: "p-1",
      resumed: false,
      status: "active",
    });

    const again = await sessions
      .start({ session_id: id, model: "m-1", provider: "p-1" })
      .catch((e: unknown) => e);
    expect((again as { code?: string }).code).toBe("invalid_request");

    const resumed = await sessions.start({ session_id: id, model: "m-2", provider: "p-1", resume: true });
    expect(resumed).toMatchObject({ resumed: true, record: { generation: 1, model: "m-2" } });
    expect(resumed.correlation.session_generation).toBe(1);
    expect(seenByHandler[1]?.record).toMatchObject({ generation: 1 });
    expect(seenByHandler).toHaveLength(2);
    expect(await kindsOf(id)).toEqual(["session.started", "session.started"]);
  });

  it("SessionEnd fires exactly once when end is called twice concurrently", async () => {
    let calls = 0;
    let recordAtEnd: SessionRecord | null = null;
    await scope.serve(HookName.SessionEnd, { name: "counter" }, async (envelope) => {
      calls++;
      recordAtEnd = await readSession(envelope.correlation.session_id);
      return null;
    });
    const id = newSessionId();
    await sessions.start({ session_id: id, model: "m", provider: "p" });
    const results = await Promise.all([
      sessions.end(id, { reason: "user_exit", status: "completed" }),
      sessions.end(id, { reason: "shutdown", status: "error" }),
    ]);
    expect(results.filter((r) => r.ended)).toHaveLength(1);
    expect(calls).toBe(1);
    expect(recordAtEnd).toMatchObject({ status: expect.stringMatching(/^(completed|error)$/) });
    const later = await sessions.end(id, { reason: "again", status: "completed" });
    expect(later.ended).toBe(false);
    expect(calls).toBe(1);
    expect((await kindsOf(id)).filter((k) => k === "session.ended")).toHaveLength(1);
    const ended = (await eventsOf(env().jsm, env().names.eventsStream)).filter(
      (e) => e.event === "session_ended" && e.correlation.session_id === id,
    );
    expect(ended).toHaveLength(1);
  });

  it("per-session verification state survives turn boundaries and is cleared only by the durable end", async () => {
    const { nc, names } = env();
    const verifier: RunningVerifier = await startVerifier({ nc, names });
    try {
      const verify = createVerifyClient({ nc, names });
      const id = newSessionId();
      await sessions.start({ session_id: id, model: "m", provider: "p" });
      for (const turn of ["turn-a", "turn-b"]) {
        const r = await verify.finalize({
          correlation: { session_id: id, turn_id: turn },
          candidate: candidate("ok"),
        });
        expect(r.policy_action).toBe("accept");
      }
      const kv = await new Kvm(nc).open(names.buckets.verify);
      const liveKeys = async () => {
        const keys: string[] = [];
        for await (const k of await kv.keys(names.verifySessionFilter(id))) keys.push(k);
        return keys.sort();
      };
      // a new turn did not clear the previous one's counters
      expect(await liveKeys()).toEqual([`${id}.turn-a`, `${id}.turn-b`]);
      // the budget of turn-a is still counted after the turn boundary
      const next = await verify.finalize({
        correlation: { session_id: id, turn_id: "turn-a" },
        candidate: candidate("ok"),
      });
      expect(next.verify_attempt).toBe(1);

      await sessions.end(id, { reason: "done", status: "completed" });
      // The verifier clears its own state when it reads the session's `session.ended` record.
      await waitFor(async () => (await liveKeys()).length === 0);
    } finally {
      await verifier.stop();
    }
  });
});

describe("sub-agents", () => {
  it("SubagentStart sees the child's durable record; SubagentStop follows its terminal result once", async () => {
    const starts: (SessionRecord | null)[] = [];
    const stops: { record: SessionRecord | null; payload: Record<string, unknown> }[] = [];
    await scope.serve(HookName.SubagentStart, { name: "sa-start" }, async (envelope) => {
      starts.push(await readSession(envelope.payload["child_session_key"] as string));
      return null;
    });
    await scope.serve(HookName.SubagentStop, { name: "sa-stop" }, async (envelope) => {
      stops.push({
        record: await readSession(envelope.payload["child_session_key"] as string),
        payload: envelope.payload,
      });
      return null;
    });
    const parent = newSessionId();
    const subagents = createSubagents({ nc: env().nc, names: env().names });
    const child = await subagents.start({
      task_id: "task-1",
      task_type: "research",
      description: "look things up",
      parent_session_id: parent,
    });
    expect(child.child_session_id).toBe(`${parent}-task-1`);
    expect(starts).toEqual([expect.objectContaining({ status: "active" })]);

    const [a, b] = await Promise.all([
      child.stop({ success: false, error: "tool crashed" }),
      child.stop({ success: true }),
    ]);
    expect([a.stopped, b.stopped].filter(Boolean)).toHaveLength(1);
    expect(stops).toHaveLength(1);
    expect(stops[0]?.record?.status).toMatch(/^(completed|error)$/);
    expect(stops[0]?.payload).toMatchObject({ task_id: "task-1", child_session_key: `${parent}-task-1` });
    expect(await kindsOf(parent)).toEqual(["subagent.started", "subagent.stopped"]);
    const events = (await eventsOf(env().jsm, env().names.eventsStream))
      .filter((e) => e.correlation.session_id === parent && e.event.startsWith("subagent_"))
      .map((e) => e.event);
    expect(events).toHaveLength(2);
    expect(events[0]).toBe("subagent_started");
    expect(events[1]).toMatch(/^subagent_(completed|failed)$/);
    expect(JSON.stringify(await timelineOf(env().jsm, env().names.timelineStream))).not.toContain(
      "look things up",
    );
  });
});

describe("compaction", () => {
  const request = (hard: boolean) => ({
    model: "m",
    provider: "p",
    message_count: 40,
    keep_recent: 6,
    trigger: "auto",
    hard,
    correlation: { session_id: "compacting" },
  });

  it("a PreCompact defer postpones a soft compaction but never a hard one; rewrite changes keep_recent", async () => {
    await scope.serve(HookName.PreCompact, { name: "deferrer" }, () => ({ action: "defer", reason: "busy" }));
    await scope.serve(HookName.PreCompact, { name: "keeper", priority: 200 }, () => ({
      action: "rewrite",
      updates: { keep_recent: 10 },
    }));
    const compactor = createCompactor({ nc: env().nc, names: env().names });
    let compacted = 0;
    const steps = {
      compact: async (plan: { keep_recent: number }) => {
        compacted++;
        return { state: { kept: plan.keep_recent }, new_message_count: plan.keep_recent + 1 };
      },
      store: async () => undefined,
    };
    const soft = await compactor.run(request(false), steps);
    expect(soft).toMatchObject({ status: "deferred", reason: "busy" });
    expect(compacted).toBe(0);

    const hard = await compactor.run(request(true), steps);
    expect(hard).toMatchObject({ status: "compacted", plan: { keep_recent: 10 }, new_message_count: 11 });
    expect(hard.status === "compacted" && hard.overridden.map((d) => d.handler)).toEqual(["deferrer"]);
    expect(compacted).toBe(1);
  });

  it("PostCompact runs only after the compacted state is stored, and not at all when storing fails", async () => {
    let stored = false;
    const postSaw: boolean[] = [];
    await scope.serve(HookName.PostCompact, { name: "after" }, (envelope) => {
      postSaw.push(stored && envelope.payload["persisted"] === true);
      return null;
    });
    const compactor = createCompactor({ nc: env().nc, names: env().names });
    const compact = async () => ({ state: "summary", new_message_count: 3 });
    const failed = await compactor
      .run(request(false), {
        compact,
        store: async () => {
          throw new Error("disk full");
        },
      })
      .catch((e: unknown) => e);
    expect((failed as Error).message).toBe("disk full");
    expect(postSaw).toEqual([]);

    const ok = await compactor.run(request(false), {
      compact,
      store: async () => {
        await new Promise((r) => setTimeout(r, 20));
        stored = true;
      },
    });
    expect(ok.status).toBe("compacted");
    expect(postSaw).toEqual([true]);
  });
});
