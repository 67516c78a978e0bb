import {
  names as buildNames,
  type EventEnvelope,
  EventEnvelopeSchema,
  RUNTIME_EVENTS,
  sha256,
  type TimelineRecord,
  TimelineRecordSchema,
} from "@geode/contracts";
import { uniqueNamespace, useTestEnv } from "@geode/testing";
import { StorageType } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { decodeJson } from "./codec.js";
import { RuntimeEventBus } from "./event-bus.js";
import { ensureEventStreams } from "./provision.js";

describe("RuntimeEventBus", () => {
  const env = useTestEnv();

  it("stores each event once in {NS}_EVENTS with its id as Nats-Msg-Id, even when retried", async () => {
    const { nc, names, jsm } = env();
    const bus = await RuntimeEventBus.create({ nc, names, source: "test" });
    const first = await bus.emit("turn_completed", { rounds: 2 }, { session_id: "s1" }, { id: "fixed-id-1" });
    const again = await bus.emit("turn_completed", { rounds: 2 }, { session_id: "s1" }, { id: "fixed-id-1" });
    expect(first?.id).toBe("fixed-id-1");
    expect(again?.id).toBe("fixed-id-1");
    const info = await jsm.streams.info(names.eventsStream);
    expect(info.state.messages).toBe(1);
    const stored = await jsm.streams.getMessage(names.eventsStream, { seq: info.state.last_seq });
    const body = EventEnvelopeSchema.parse(decodeJson(stored!.data));
    expect(body.event).toBe("turn_completed");
    expect(body.correlation.session_id).toBe("s1");
    expect(stored!.header.get("Nats-Msg-Id")).toBe("fixed-id-1");
  });

  it("gives each observer an isolated deep copy; a failing observer changes nothing", async () => {
    const { nc, names } = env();
    const bus = await RuntimeEventBus.create({ nc, names, source: "test" });
    const seen: EventEnvelope[] = [];
    bus.subscribe((e) => {
      (e.payload["nested"] as { list: string[] }).list.push("mutated");
      throw new Error("observer exploded");
    });
    bus.subscribe((e) => {
      seen.push(e);
    });
    const payload = { nested: { list: ["a"] } };
    const stored = await bus.emit(RUNTIME_EVENTS[0]!, payload);
    expect(stored).not.toBeNull();
    expect(payload.nested.list).toEqual(["a"]);
    expect((seen[0]!.payload["nested"] as { list: string[] }).list).toEqual(["a"]);
    expect((stored!.payload["nested"] as { list: string[] }).list).toEqual(["a"]);
  });

  it("sanitizes event payloads before they reach the stream", async () => {
    const { nc, names } = env();
    const bus = await RuntimeEventBus.create({ nc, names, source: "test" });
    const stored = await bus.emit("memory_saved", { api_key: "sk-live-1234567890abcdefghij", note: "ok" });
    expect(stored?.payload).toEqual({ note: "ok", _redacted_fields: ["api_key"] });
  });

  it("with batched publishes, stores every event once and in emit order, and flush waits for them", async () => {
    const { nc, names, jsm } = env();
    const bus = await RuntimeEventBus.create({ nc, names, source: "test", batchPublishes: true });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      void bus.emit("tool_exec_started", { i }, { session_id: "batch" }).then((e) => e && ids.push(e.id));
    }
    await bus.flush();
    expect(ids).toHaveLength(5);
    // The file's tests share one namespace: look at this test's events only.
    const info = await jsm.streams.info(names.eventsStream);
    const stored: number[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const msg = await jsm.streams.getMessage(names.eventsStream, { seq });
      const e = EventEnvelopeSchema.parse(decodeJson(msg!.data));
      if (e.correlation.session_id === "batch") stored.push((e.payload as { i: number }).i);
    }
    expect(stored).toEqual([0, 1, 2, 3, 4]);
  });

  it("with a batch delay, holds publishes until sendQueued, which sends them ahead of the caller's next message; flush sends at once", async () => {
    const { nc, names, jsm } = env();
    const bus = await RuntimeEventBus.create({
      nc,
      names,
      source: "test",
      batchPublishes: true,
      batchDelayMs: 60_000,
    });
    const order = async () => {
      const info = await jsm.streams.info(names.eventsStream);
      const seen: number[] = [];
      if (info.state.messages === 0) return seen;
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const msg = await jsm.streams.getMessage(names.eventsStream, { seq });
        const e = EventEnvelopeSchema.parse(decodeJson(msg!.data));
        if (e.correlation.session_id === "queued") seen.push((e.payload as { i: number }).i);
      }
      return seen;
    };
    const first = bus.emit("tool_exec_started", { i: 0 }, { session_id: "queued" });
    await nc.flush();
    await new Promise((r) => setTimeout(r, 100));
    expect(await order()).toEqual([]);
    bus.sendQueued();
    // The next step on the same connection (a plain publish here) comes after the queued event.
    const next = bus.envelope("tool_exec_ended", { i: 1 }, { session_id: "queued" });
    nc.publish(names.event("tool_exec_ended"), JSON.stringify(next));
    expect((await first)?.payload).toEqual({ i: 0 });
    void bus.emit("tool_exec_ended", { i: 2 }, { session_id: "queued" });
    await bus.flush(); // would wait the 60 s delay if it did not send the outbox itself
    await nc.flush();
    expect(await order()).toEqual([0, 1, 2]);
  });

  it("isolates timeline observers too and stores the record with the sha256 of its payload", async () => {
    const { nc, names, jsm } = env();
    const bus = await RuntimeEventBus.create({ nc, names, source: "test" });
    const seen: TimelineRecord[] = [];
    bus.subscribeTimeline(async (r) => {
      (r.payload["decisions"] as Array<{ action: string }>)[0]!.action = "tampered";
      throw new Error("async observer failed");
    });
    bus.subscribeTimeline((r) => {
      seen.push(r);
    });
    const payload = { decisions: [{ action: "accept" }] };
    const stored = await bus.timeline("verification.decided", payload, { session_id: "s-t" });
    expect(stored).not.toBeNull();
    expect(payload.decisions[0]!.action).toBe("accept");
    expect((seen[0]!.payload["decisions"] as Array<{ action: string }>)[0]!.action).toBe("accept");
    const info = await jsm.streams.info(names.timelineStream);
    const msg = await jsm.streams.getMessage(names.timelineStream, { seq: info.state.last_seq });
    const body = TimelineRecordSchema.parse(decodeJson(msg!.data));
    expect(body.payload).toEqual({ decisions: [{ action: "accept" }] });
    expect(body.payload_sha256).toBe(sha256(body.payload));
    expect(msg!.header.get("Nats-Msg-Id")).toBe(body.id);
  });

  it("provisions both streams with the configured replicas, max age and duplicate window, and never reconfigures them", async () => {
    const { natsUrl, jsm } = env();
    const n = buildNames(`${env().ns}_cfg`.slice(0, 32));
    const nc = await connect({ servers: natsUrl });
    try {
      await RuntimeEventBus.create({
        nc,
        names: n,
        source: "test",
        streams: { replicas: 1, maxAgeMs: 3_600_000, duplicateWindowMs: 30_000 },
      });
      // A second creator with other options leaves the existing configuration alone.
      await RuntimeEventBus.create({ nc, names: n, source: "test", streams: { maxAgeMs: 60_000 } });
      for (const stream of [n.eventsStream, n.timelineStream]) {
        const { config } = await jsm.streams.info(stream);
        expect(config.storage).toBe(StorageType.File);
        expect(config.num_replicas).toBe(1);
        expect(config.max_age).toBe(3_600_000 * 1_000_000);
        expect(config.duplicate_window).toBe(30_000 * 1_000_000);
      }
    } finally {
      for (const s of [n.eventsStream, n.timelineStream]) await jsm.streams.delete(s).catch(() => undefined);
      await nc.close();
    }
  });

  it("a publish failure is counted and logged, never thrown into the caller", async () => {
    const { natsUrl, names } = env();
    const nc = await connect({ servers: natsUrl });
    const bus = await RuntimeEventBus.create({ nc, names, source: "test", publishAttempts: 2 });
    await nc.close();
    const seen: EventEnvelope[] = [];
    bus.subscribe((e) => {
      seen.push(e);
    });
    await expect(bus.emit("turn_completed", { rounds: 1 })).resolves.toBeNull();
    await expect(bus.timeline("session.ended", { reason: "done", status: "completed" })).resolves.toBeNull();
    // A bad correlation is the caller's mistake, still not an exception on the control path.
    await expect(bus.emit("turn_completed", {}, { nope: "x" } as never)).resolves.toBeNull();
    await bus.flush();
    expect(bus.publishFailures).toBe(3);
    expect(seen).toHaveLength(1); // observers still saw the valid event
  });
  it("re-sends an unacked publish with the same id until the stream takes it, and stores it once", async () => {
    const { natsUrl, jsm } = env();
    const n = buildNames(uniqueNamespace("r"));
    const nc = await connect({ servers: natsUrl });
    try {
      // No stream yet: the first sends get no ack (no responders); the sweep re-sends.
      const bus = await RuntimeEventBus.create({
        nc,
        names: n,
        source: "test",
        provision: false,
        ackTimeoutMs: 100,
        publishAttempts: 20,
      });
      const pending = bus.emit("memory_saved", { note: "late stream" }, {}, { id: "late-1" });
      await new Promise((r) => setTimeout(r, 250));
      await ensureEventStreams(nc, n);
      const stored = await pending;
      expect(stored?.id).toBe("late-1");
      await bus.close();
      expect((await jsm.streams.info(n.eventsStream)).state.messages).toBe(1);
    } finally {
      for (const s of [n.eventsStream, n.timelineStream]) await jsm.streams.delete(s).catch(() => undefined);
      await nc.close();
    }
  });

  it("gives up after its attempts when no stream ever takes the message", async () => {
    const { natsUrl } = env();
    const nc = await connect({ servers: natsUrl });
    try {
      const bus = await RuntimeEventBus.create({
        nc,
        names: buildNames(uniqueNamespace("g")),
        source: "test",
        provision: false,
        ackTimeoutMs: 50,
        publishAttempts: 2,
      });
      await expect(bus.emit("memory_saved", { note: "nowhere" })).resolves.toBeNull();
      expect(bus.publishFailures).toBe(1);
      await bus.close();
    } finally {
      await nc.close();
    }
  });
});
