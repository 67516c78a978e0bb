/**
 * Events in step order, observed on the wire: an event that records a step reaches the stream
 * before the next step that others can observe begins. A core NATS subscription sees messages of
 * one publisher in the order the server took them in, which is also the order the stream took
 * them in; a tool terminal and a hook caller reading the stream find the event already there.
 */
import { decodeJson } from "@geode/bus";
import { type EventEnvelope, HookName } from "@geode/contracts";
import { createHookClient, createToolClient } from "@geode/runtime";
import { serveTool } from "@geode/sdk";
import { startToolExecutor } from "@geode/tool-executor";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { useHookFixture } from "./hooks-support.js";

const { env, scope } = useHookFixture();

interface Seen {
  subject: string;
  body: Record<string, unknown>;
}

/** Records every message on `subjects`, in arrival order, on a connection of its own. */
async function observe(subjects: string[]): Promise<{ seen: Seen[]; close(): void }> {
  const observer = await env().connect("order-observer");
  const seen: Seen[] = [];
  const subs = subjects.map((subject) =>
    observer.subscribe(subject, {
      callback: (_err, m) => {
        let body: Record<string, unknown> = {};
        try {
          body = decodeJson(m.data) as Record<string, unknown>;
        } catch {
          // not JSON (a JetStream ack, a probe): its subject is enough
        }
        seen.push({ subject: m.subject, body });
      },
    }),
  );
  await observer.flush();
  return {
    seen,
    close() {
      for (const s of subs) s.unsubscribe();
    },
  };
}

const correlationOf = (s: Seen) => (s.body["correlation"] ?? {}) as Record<string, unknown>;

/** Index of the first message on `subject` whose correlation has `field` = `value`. */
function indexOf(seen: Seen[], subject: string, field: string, value: string): number {
  const i = seen.findIndex((s) => s.subject === subject && correlationOf(s)[field] === value);
  expect(i, `${subject} with ${field}=${value} was seen`).toBeGreaterThanOrEqual(0);
  return i;
}

describe("events in step order", () => {
  it("tool_exec_started is in the stream before the terminal request, tool_exec_ended before PostToolUse", async () => {
    const { nc, names, jsm } = env();
    const wire = await observe([`${names.ns}.>`]);
    const provider = await env().connect("order-provider");
    // What the terminal finds in the stream when its request arrives: the latest tool_exec_started.
    const foundByTerminal = new Map<string, string>();
    const served = await serveTool(
      { nc: provider, names },
      {
        name: "order.remote",
        description: "looks for its own tool_exec_started",
        input_schema: { type: "object" },
        effect: "mutation",
        requires_approval: false,
      },
      async (_args, call) => {
        const m = await jsm.streams.getMessage(names.eventsStream, {
          last_by_subj: names.event("tool_exec_started"),
        });
        const started = m ? (decodeJson(m.data) as EventEnvelope) : null;
        foundByTerminal.set(call.correlation.tool_call_id, started?.correlation.tool_call_id ?? "none");
        return { result: { ok: true } };
      },
    );
    // The executor publishes with its own event bus, as deployed.
    const executor = await startToolExecutor({ nc, names, tools: [] });
    try {
      const client = createToolClient({ nc, names });
      const ids = Array.from({ length: 20 }, (_, i) => `order-${i}`);
      for (const id of ids) {
        const reply = await client.execute({
          tool_name: "order.remote",
          arguments: {},
          correlation: { session_id: "s", tool_call_id: id },
        });
        expect(reply.status).toBe("completed");
      }
      await nc.flush();
      for (const id of ids) {
        const started = indexOf(wire.seen, names.event("tool_exec_started"), "tool_call_id", id);
        const terminal = indexOf(wire.seen, names.toolTerminal("order.remote"), "tool_call_id", id);
        const ended = indexOf(wire.seen, names.event("tool_exec_ended"), "tool_call_id", id);
        const post = indexOf(wire.seen, names.hookInvoke(HookName.PostToolUse), "tool_call_id", id);
        expect(started, `${id}: tool_exec_started before the terminal request`).toBeLessThan(terminal);
        expect(ended, `${id}: tool_exec_ended before PostToolUse`).toBeLessThan(post);
        expect(foundByTerminal.get(id), `${id}: the terminal found its tool_exec_started stored`).toBe(id);
      }
    } finally {
      wire.close();
      await executor.stop();
      await served.close();
    }
  });

  it("a handler's extension_invoked goes out before the next handler's request and before the chain's reply", async () => {
    const { names, jsm, natsUrl } = env();
    for (const [name, priority] of [
      ["order-first", 1],
      ["order-second", 2],
    ] as const)
      await scope().serve(HookName.UserPromptSubmit, { name, priority }, () => null);
    // The caller's replies come to an inbox prefix of its own, so the observer can watch them.
    const inboxPrefix = `_INBOX_${names.ns}`;
    const caller: NatsConnection = await connect({ servers: natsUrl, inboxPrefix, name: "order-caller" });
    const wire = await observe([`${names.ns}.>`, `${inboxPrefix}.>`]);
    try {
      const hooks = createHookClient(caller, names);
      const turns = Array.from({ length: 20 }, (_, i) => `turn-${i}`);
      for (const turn_id of turns) {
        await hooks.invoke(HookName.UserPromptSubmit, { user_input: "hi" }, { session_id: "s", turn_id });
        // The caller, holding the reply, finds the last handler's audit stored.
        const m = await jsm.streams.getMessage(names.eventsStream, {
          last_by_subj: names.event("extension_invoked"),
        });
        const audit = decodeJson(m!.data) as EventEnvelope;
        expect(audit.correlation.turn_id).toBe(turn_id);
        expect(audit.payload["extension"]).toBe("order-second");
      }
      await caller.flush();
      const auditOf = (turn_id: string, extension: string) =>
        wire.seen.findIndex(
          (s) =>
            s.subject === names.event("extension_invoked") &&
            correlationOf(s)["turn_id"] === turn_id &&
            (s.body["payload"] as Record<string, unknown>)["extension"] === extension,
        );
      for (const turn_id of turns) {
        const firstAudit = auditOf(turn_id, "order-first");
        const secondAudit = auditOf(turn_id, "order-second");
        const secondRequest = indexOf(
          wire.seen,
          names.hookHandler(HookName.UserPromptSubmit, "order-second"),
          "turn_id",
          turn_id,
        );
        const reply = wire.seen.findIndex(
          (s) => s.subject.startsWith(`${inboxPrefix}.`) && correlationOf(s)["turn_id"] === turn_id,
        );
        expect(Math.min(firstAudit, secondAudit, reply)).toBeGreaterThanOrEqual(0);
        expect(firstAudit, `${turn_id}: first handler's audit before the second's request`).toBeLessThan(
          secondRequest,
        );
        expect(secondAudit, `${turn_id}: last handler's audit before the chain's reply`).toBeLessThan(reply);
      }
    } finally {
      wire.close();
      await caller.close();
    }
  });
});
