import { formatTraceparent } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { newSpanId, newTraceContext, traceSamplerFollowsParent, traceSamplerFromEnv } from "./trace-ids.js";

describe("new traces", () => {
  it("starts sampled root traces with fresh ids", () => {
    const a = newTraceContext();
    const b = newTraceContext();
    expect(formatTraceparent(a)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(a.root).toBe(true);
    expect(a.traceId).not.toBe(b.traceId);
  });
});

describe("head sampling of new traces (OTEL_TRACES_SAMPLER)", () => {
  const ids = Array.from({ length: 2000 }, () => newTraceContext(() => true).traceId);
  const share = (env: Record<string, string>) => ids.filter(traceSamplerFromEnv(env)).length / ids.length;

  it("records every trace unless told otherwise, as the SDK's default parentbased_always_on", () => {
    expect(share({})).toBe(1);
    expect(share({ OTEL_TRACES_SAMPLER: "parentbased_always_on" })).toBe(1);
    expect(share({ OTEL_TRACES_SAMPLER: "no_such_sampler" })).toBe(1);
    expect(share({ OTEL_TRACES_SAMPLER: "always_off" })).toBe(0);
    expect(share({ OTEL_TRACES_SAMPLER: "parentbased_always_off" })).toBe(0);
  });

  it("keeps about the ratio of traces, the same ones every time, and reads a bad ratio as 1", () => {
    const env = { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" };
    expect(share(env)).toBeGreaterThan(0.07);
    expect(share(env)).toBeLessThan(0.13);
    const once = ids.filter(traceSamplerFromEnv(env));
    expect(ids.filter(traceSamplerFromEnv(env))).toEqual(once);
    expect(share({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" })).toBe(0);
    expect(share({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" })).toBe(1);
    expect(share({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "half" })).toBe(1);
    expect(share({ OTEL_TRACES_SAMPLER: "traceidratio" })).toBe(1);
  });

  it("tells which samplers keep the parent's decision, as the SDK reads the name", () => {
    for (const name of ["", "parentbased_always_on", " ParentBased_TraceIdRatio ", "no_such_sampler"])
      expect(traceSamplerFollowsParent({ OTEL_TRACES_SAMPLER: name }), name).toBe(true);
    expect(traceSamplerFollowsParent({})).toBe(true);
    for (const name of ["always_on", "always_off", " TraceIdRatio"])
      expect(traceSamplerFollowsParent({ OTEL_TRACES_SAMPLER: name }), name).toBe(false);
  });

  it("writes the decision into the new trace's flags", () => {
    expect(newTraceContext(() => true).flags).toBe("01");
    expect(newTraceContext(() => false).flags).toBe("00");
    const off = newTraceContext(traceSamplerFromEnv({ OTEL_TRACES_SAMPLER: "always_off" }));
    expect(formatTraceparent(off)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  });
});

describe("random ids", () => {
  it("gives distinct, well-formed span and trace ids, across refills of the random pool", () => {
    const spans = Array.from({ length: 3_000 }, () => newSpanId());
    const traces = Array.from({ length: 1_000 }, () => newTraceContext(() => true));
    for (const id of spans) expect(id).toMatch(/^[0-9a-f]{16}$/);
    for (const t of traces) {
      expect(t.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(t.spanId).toMatch(/^[0-9a-f]{16}$/);
    }
    expect(new Set(spans).size).toBe(spans.length);
    expect(new Set(traces.map((t) => t.traceId)).size).toBe(traces.length);
    // Every byte value turns up: the ids are not stuck on part of the pool.
    const bytes = new Set(spans.join("").match(/../g));
    expect(bytes.size).toBe(256);
  });
});
