import type { TraceContext } from "@geode/contracts";
import { SpanStatusCode, TraceFlags } from "@opentelemetry/api";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it, vi } from "vitest";
import { spanBatchConfig } from "./span-export.js";
import {
  parentContext,
  readableSpan,
  recordSpans,
  type SpanRecord,
  type SpanTarget,
} from "./span-records.js";
import { newTraceContext } from "./trace-ids.js";
import { currentTrace, flushSpans, runInTrace, setTracer, withSpan } from "./tracing.js";

const exporter = new InMemorySpanExporter();
const resource = resourceFromAttributes({ "service.name": "deferred-spans-test", "service.version": "1" });
const target: SpanTarget = {
  processor: new SimpleSpanProcessor(exporter),
  resource,
  scope: { name: "t", version: "1" },
};
/**
 * The production set-up of startTracing: noted spans go to the provider's processor, with its
 * resource and its tracer's scope. The spans wait for `flushSpans` (a minute) unless a test asks
 * for the timer, so a busy machine cannot make them early.
 */
function deferredTracer(flushAfterMs = 60_000): void {
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [target.processor as SimpleSpanProcessor],
  });
  setTracer(provider.getTracer("t", "1"), { target, flushAfterMs });
}
/** A sampled trace from another process, as a request's `traceparent` brings it. */
const remote = (): TraceContext => ({ ...newTraceContext(() => true), root: false, state: "vendor=x" });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterEach(() => {
  vi.restoreAllMocks();
  setTracer(undefined);
  exporter.reset();
});

describe("spans noted on the hot path and made by the SDK in a batch", () => {
  it("makes each span later with the ids, parent, times and attributes the request saw", async () => {
    deferredTracer();
    const parent = remote();
    let inner: TraceContext | undefined;
    let outer: TraceContext | undefined;
    const before = Date.now();
    await runInTrace(parent, () =>
      withSpan("geode.hook.invoke", { "geode.hook": "PreToolUse" }, async () => {
        outer = currentTrace();
        await withSpan("geode.hook.handler", { "geode.handler": "h" }, async () => {
          inner = currentTrace();
          await sleep(30);
        });
      }),
    );
    const after = Date.now();
    // Nothing reaches the SDK while the request runs.
    expect(exporter.getFinishedSpans()).toEqual([]);
    flushSpans();
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(["geode.hook.handler", "geode.hook.invoke"]);
    const [handler, invoke] = spans as [(typeof spans)[0], (typeof spans)[0]];
    // The ids the messages carried are the ids of the spans.
    expect(outer).toMatchObject({ traceId: parent.traceId, flags: "01", state: "vendor=x" });
    expect(invoke.spanContext().spanId).toBe(outer?.spanId);
    expect(invoke.spanContext().traceId).toBe(parent.traceId);
    expect(invoke.parentSpanContext?.spanId).toBe(parent.spanId);
    expect(invoke.spanContext().traceState?.serialize()).toBe("vendor=x");
    expect(handler.spanContext().spanId).toBe(inner?.spanId);
    expect(handler.parentSpanContext?.spanId).toBe(outer?.spanId);
    expect(invoke.attributes).toEqual({ "geode.hook": "PreToolUse" });
    expect(handler.attributes).toEqual({ "geode.handler": "h" });
    // The times are the request's own, not the flush's.
    const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;
    expect(ms(handler.endTime) - ms(handler.startTime)).toBeGreaterThanOrEqual(29);
    expect(ms(invoke.startTime)).toBeLessThanOrEqual(ms(handler.startTime));
    expect(ms(invoke.endTime)).toBeGreaterThanOrEqual(ms(handler.endTime));
    expect(ms(invoke.startTime)).toBeGreaterThanOrEqual(before - 1);
    expect(ms(invoke.endTime)).toBeLessThanOrEqual(after + 1);
  });

  it("marks a span whose work threw as an error, and rethrows", async () => {
    deferredTracer();
    const thrown = runInTrace(remote(), () =>
      withSpan("s", {}, async () => {
        throw new Error("handler went away");
      }),
    );
    await expect(thrown).rejects.toThrow("handler went away");
    flushSpans();
    const [span] = exporter.getFinishedSpans();
    expect(span?.status).toEqual({ code: 2, message: "handler went away" });
  });

  it("makes them by itself soon after, and before the tracer changes", async () => {
    deferredTracer(20);
    await runInTrace(remote(), () => withSpan("by-timer", {}, async () => 1));
    // A 20 ms timer, waited for up to 10 s: a busy CI machine may run it late, never early.
    const deadline = Date.now() + 10_000;
    while (exporter.getFinishedSpans().length === 0 && Date.now() < deadline) await sleep(10);
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(["by-timer"]);

    await runInTrace(remote(), () => withSpan("at-stop", {}, async () => 1));
    setTracer(undefined); // what a service's stop does
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(["by-timer", "at-stop"]);
  });

  it("times them by the wall clock of when they are made, as the SDK does (a clock adjusted meanwhile)", async () => {
    deferredTracer();
    const before = Date.now();
    await runInTrace(remote(), () => withSpan("s", {}, async () => 1));
    // The system clock jumps 10 s ahead (NTP) before the batch is made; the monotonic clock does not.
    const now = Date.now;
    vi.spyOn(Date, "now").mockImplementation(() => now() + 10_000);
    flushSpans();
    const [span] = exporter.getFinishedSpans();
    const start = (span?.startTime[0] ?? 0) * 1000 + (span?.startTime[1] ?? 0) / 1e6;
    expect(start).toBeGreaterThanOrEqual(before + 10_000 - 1);
    expect(start).toBeLessThanOrEqual(now() + 10_000 + 1);
  });

  it("makes a batch at once when many wait, each with its own id", async () => {
    deferredTracer();
    const seen = new Set<string>();
    for (let i = 0; i < 600; i++)
      await runInTrace(remote(), () =>
        withSpan("many", {}, async () => {
          seen.add(currentTrace()?.spanId ?? "");
        }),
      );
    flushSpans();
    const ids = exporter.getFinishedSpans().map((s) => s.spanContext().spanId);
    expect(ids.length).toBe(600);
    expect(new Set(ids)).toEqual(seen);
  });

  it("still makes a root span in place: its trace id and sampling are the SDK's to choose", async () => {
    deferredTracer();
    await runInTrace(
      newTraceContext(() => true),
      () => withSpan("root", {}, async () => 1),
    );
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(["root"]);
  });

  it("notes nothing under a parent that is not sampled", async () => {
    deferredTracer();
    await runInTrace({ ...remote(), flags: "00" }, () => withSpan("s", {}, async () => 1));
    flushSpans();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});

describe("spans noted for another thread", () => {
  it("hands a sink plain records (as a worker receives them) with wall-clock times and no SDK work", async () => {
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const batches: SpanRecord[][] = [];
    setTracer(provider.getTracer("t"), {
      sink: (records) => batches.push(structuredClone(records)),
      flushAfterMs: 60_000,
    });
    const parent = remote();
    let seen: TraceContext | undefined;
    const before = Date.now();
    await runInTrace(parent, () =>
      withSpan("geode.hook.handler", { "geode.handler": "h" }, async () => {
        seen = currentTrace();
        throw new Error("boom");
      }),
    ).catch(() => undefined);
    const after = Date.now();
    flushSpans();
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect(batches).toHaveLength(1);
    const [record] = batches[0] as [SpanRecord];
    expect(record).toMatchObject({
      name: "geode.hook.handler",
      attributes: { "geode.handler": "h" },
      parent: { traceId: parent.traceId, spanId: parent.spanId, state: "vendor=x" },
      spanId: seen?.spanId,
      error: "boom",
    });
    expect(record.startMs).toBeGreaterThanOrEqual(before - 1);
    expect(record.endMs).toBeLessThanOrEqual(after + 1);
    expect(record.endMs).toBeGreaterThanOrEqual(record.startMs);
    // What the thread does with them: the same spans as in this thread.
    recordSpans(target, batches[0]!);
    const [span] = exporter.getFinishedSpans();
    expect(span?.spanContext()).toMatchObject({ traceId: parent.traceId, spanId: seen?.spanId });
    expect(span?.parentSpanContext?.spanId).toBe(parent.spanId);
    expect(span?.status).toMatchObject({ code: SpanStatusCode.ERROR, message: "boom" });
  });

  it.each([
    ["a span that ended", undefined, undefined, false],
    ["a span that threw, under a parent with a trace state", "boom", "vendor=x,other=y", false],
    ["the root span of a trace started here", undefined, undefined, true],
  ])("makes %s exactly as the SDK's tracer makes the same span", (_, error, state, root) => {
    const parent: TraceContext = { ...newTraceContext(() => true), root, ...(state ? { state } : {}) };
    const record: SpanRecord = {
      name: "geode.hook.handler",
      attributes: { "geode.hook": "PreToolUse", "geode.handler": "guard" },
      parent,
      spanId: "00f067aa0ba902b7",
      startMs: 1_764_590_400_123.25,
      endMs: 1_764_590_400_125.5,
      error,
    };
    // The SDK, as a request's span made in place: the same parent, ids, times and attributes.
    const provider = new BasicTracerProvider({
      resource,
      spanProcessors: [target.processor as SimpleSpanProcessor],
      idGenerator: { generateSpanId: () => record.spanId, generateTraceId: () => parent.traceId },
    });
    const hr = (ms: number): [number, number] => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)];
    const sdkSpan = provider
      .getTracer("t", "1")
      .startSpan(
        record.name,
        { attributes: record.attributes, startTime: hr(record.startMs) },
        parentContext(parent),
      );
    if (error !== undefined) sdkSpan.setStatus({ code: SpanStatusCode.ERROR, message: error });
    sdkSpan.end(hr(record.endMs));
    const [sdk] = exporter.getFinishedSpans() as [ReadableSpan];
    const ours = readableSpan(record, target);
    const fields = (s: ReadableSpan) => ({
      name: s.name,
      kind: s.kind,
      spanContext: { ...s.spanContext(), traceState: s.spanContext().traceState?.serialize() },
      parentSpanContext: { ...s.parentSpanContext, traceState: s.parentSpanContext?.traceState?.serialize() },
      startTime: s.startTime,
      endTime: s.endTime,
      duration: s.duration,
      status: s.status,
      attributes: s.attributes,
      links: s.links,
      events: s.events,
      ended: s.ended,
      resource: s.resource.attributes,
      instrumentationScope: { ...s.instrumentationScope },
      dropped: [s.droppedAttributesCount, s.droppedEventsCount, s.droppedLinksCount],
    });
    expect(fields(ours)).toEqual(fields(sdk));
    expect(ours.parentSpanContext === undefined).toBe(root);
    expect(ours.spanContext().traceFlags).toBe(TraceFlags.SAMPLED);
    expect(ours.status.code).toBe(error === undefined ? SpanStatusCode.UNSET : SpanStatusCode.ERROR);
  });

  it("leaves the export delay to OTEL_BSP_SCHEDULE_DELAY when set, else 200 ms", () => {
    expect(spanBatchConfig({})).toEqual({ scheduledDelayMillis: 200 });
    expect(spanBatchConfig({ OTEL_BSP_SCHEDULE_DELAY: "" })).toEqual({ scheduledDelayMillis: 200 });
    expect(spanBatchConfig({ OTEL_BSP_SCHEDULE_DELAY: "5000" })).toEqual({});
  });
});

describe("spans only noted, no tracer in this thread (a service with its span thread)", () => {
  const batches: SpanRecord[][] = [];
  const notingOnly = (sampler: (traceId: string) => boolean, parentBased = true) => {
    batches.length = 0;
    setTracer(undefined, {
      sink: (records) => batches.push(structuredClone(records)),
      sampler,
      parentBased,
      flushAfterMs: 60_000,
    });
  };
  /** What was noted since the last look. */
  const noted = () => {
    flushSpans();
    return batches.splice(0).flat();
  };
  const inSpan = () => withSpan("geode.gateway.hook", { "geode.hook": "Stop" }, async () => currentTrace());

  it("notes a trace that starts here as its root span, with the trace's id, never made in this thread", async () => {
    notingOnly(() => true);
    const started = newTraceContext(() => true); // as a request without traceparent gets one
    const inside = await runInTrace(started, inSpan);
    const outside = await inSpan(); // no trace at all: one starts
    const [first, second] = noted();
    expect(first).toMatchObject({ parent: { traceId: started.traceId, root: true }, spanId: inside?.spanId });
    expect(inside).toMatchObject({ traceId: started.traceId, flags: "01" });
    expect(second).toMatchObject({
      parent: { traceId: outside?.traceId, root: true },
      spanId: outside?.spanId,
    });
    recordSpans(target, [first!, second!]);
    const spans = exporter.getFinishedSpans();
    expect(spans.map((sp) => [sp.spanContext().traceId, sp.parentSpanContext])).toEqual([
      [started.traceId, undefined],
      [outside?.traceId, undefined],
    ]);
  });

  it("notes nothing for a trace its sampler did not record; the work runs under flags 00", async () => {
    notingOnly(() => false);
    const started = newTraceContext(() => false);
    const inside = await runInTrace(started, inSpan);
    expect(noted()).toEqual([]);
    expect(inside).toMatchObject({ traceId: started.traceId, flags: "00" });
    expect(inside?.spanId).not.toBe(started.spanId);
  });

  it("follows a remote parent with a parent-based sampler, and the sampler alone without one", async () => {
    notingOnly(() => false); // parent-based: the parent decides, not this
    const sampledParent = remote();
    await runInTrace(sampledParent, inSpan);
    expect(noted()).toMatchObject([{ parent: { spanId: sampledParent.spanId } }]);
    const unsampledParent: TraceContext = { ...sampledParent, flags: "00" };
    expect(await runInTrace(unsampledParent, inSpan)).toEqual(unsampledParent);
    expect(noted()).toEqual([]);
    // always_on, which ignores the parent: recorded under an unrecorded parent, and sampled below it
    notingOnly(() => true, false);
    const inside = await runInTrace(unsampledParent, inSpan);
    expect(noted()).toMatchObject([{ parent: { spanId: unsampledParent.spanId, flags: "00" } }]);
    expect(inside).toMatchObject({ traceId: unsampledParent.traceId, flags: "01" });
    // always_off: not recorded under a recorded parent, and unsampled below it
    notingOnly(() => false, false);
    expect(await runInTrace(sampledParent, inSpan)).toMatchObject({ flags: "00" });
    expect(noted()).toEqual([]);
  });
});
