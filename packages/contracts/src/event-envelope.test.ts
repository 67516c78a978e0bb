import { describe, expect, it } from "vitest";
import { eventEnvelope, timelineRecord } from "./event-envelope.js";
import { EventEnvelopeSchema, TimelineRecordSchema } from "./runtime-event.js";
import { sha256 } from "./sanitize.js";

const secret = { api_key: "sk-live-1234567890abcdefghij", note: "ok" };

describe("eventEnvelope", () => {
  it("fills the correlation, sanitizes the payload and takes a fresh id unless given one", () => {
    const a = eventEnvelope({
      kind: "memory_saved",
      source: "test",
      payload: secret,
      correlation: { session_id: "s" },
    });
    const b = eventEnvelope({ kind: "memory_saved", source: "test", payload: {}, id: "fixed" });
    expect(EventEnvelopeSchema.parse(a)).toEqual(a);
    expect(a).toMatchObject({
      event: "memory_saved",
      source: "test",
      correlation: { session_id: "s", turn_id: "", session_generation: 0 },
      payload: { note: "ok", _redacted_fields: ["api_key"] },
    });
    expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.id).toBe("fixed");
    expect(b.correlation.session_id).toBe("");
    expect(() =>
      eventEnvelope({ kind: "memory_saved", source: "t", payload: {}, correlation: { x: 1 } as never }),
    ).toThrow();
  });
});

describe("timelineRecord", () => {
  it("is an envelope with the SHA-256 of the payload as stored, after sanitizing", () => {
    const rec = timelineRecord({ kind: "tool.completed", source: "test", payload: secret, id: "r-1" });
    expect(TimelineRecordSchema.parse(rec)).toEqual(rec);
    expect(rec).toMatchObject({ id: "r-1", kind: "tool.completed", payload: { note: "ok" } });
    expect(rec.payload_sha256).toBe(sha256(rec.payload));
    expect(rec.payload_sha256).not.toBe(sha256(secret));
  });
});
