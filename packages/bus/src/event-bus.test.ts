import { type EventEnvelope, EventEnvelopeSchema, RUNTIME_EVENTS } from "@geode/contracts";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { decodeJson } from "./codec.js";
import { RuntimeEventBus } from "./event-bus.js";

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
});
