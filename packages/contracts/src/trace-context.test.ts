import { describe, expect, it } from "vitest";
import { formatTraceparent, parseTraceparent } from "./trace-context.js";

const VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

describe("W3C traceparent", () => {
  it("reads a valid header and writes it back unchanged, tracestate kept", () => {
    const ctx = parseTraceparent(VALID, "rojo=00f067aa0ba902b7");
    expect(ctx).toEqual({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      flags: "01",
      state: "rojo=00f067aa0ba902b7",
    });
    expect(formatTraceparent(ctx!)).toBe(VALID);
  });

  it("refuses what the spec calls invalid: zero ids, version ff, upper case, extra fields on 00", () => {
    for (const bad of [
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
      `${VALID}-extra`,
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
      "",
      undefined,
    ])
      expect(parseTraceparent(bad), String(bad)).toBeNull();
  });

  it("reads a later version by its first four fields", () => {
    expect(parseTraceparent(`01${VALID.slice(2)}-more`)?.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
  });
});
