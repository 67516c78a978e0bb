import { ROOT_CONTEXT } from "@opentelemetry/api";
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import { newTraceContext, traceSamplerFromEnv } from "./trace-ids.js";
import { currentTrace, runInTrace, setTracer, withSpan } from "./tracing.js";

describe("head sampling agrees with the OpenTelemetry SDK", () => {
  it("keeps exactly the traces the SDK's TraceIdRatioBasedSampler keeps, at several ratios", () => {
    const ids = Array.from({ length: 5000 }, () => newTraceContext(() => true).traceId);
    for (const ratio of [0.01, 0.1, 0.5, 0.9]) {
      const ours = traceSamplerFromEnv({
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: String(ratio),
      });
      const sdk = new TraceIdRatioBasedSampler(ratio);
      const kept = ids.filter(
        (id) => sdk.shouldSample(ROOT_CONTEXT, id).decision === SamplingDecision.RECORD_AND_SAMPLED,
      );
      expect(ids.filter(ours), `ratio ${ratio}`).toEqual(kept);
      expect(kept.length).toBeGreaterThan(0);
    }
  });
});

describe("withSpan under a parent its starter did not sample", () => {
  const exporter = new InMemorySpanExporter();
  const unsampled = newTraceContext(() => false);
  const remote = { ...unsampled, root: false };
  afterEach(() => {
    setTracer(undefined);
    exporter.reset();
  });

  it("skips the span with a parent-based sampler, and what it sends keeps the parent's context", async () => {
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    setTracer(provider.getTracer("t"));
    const inside = await runInTrace(remote, () => withSpan("s", {}, async () => currentTrace()));
    expect(inside).toEqual(remote);
    expect(exporter.getFinishedSpans()).toEqual([]);
    // A sampled parent is recorded as before.
    await runInTrace({ ...remote, flags: "01" }, () => withSpan("s", {}, async () => 1));
    expect(exporter.getFinishedSpans().map((sp) => sp.name)).toEqual(["s"]);
  });

  it("records it when the sampler does not follow the parent (always_on)", async () => {
    const provider = new BasicTracerProvider({
      sampler: new AlwaysOnSampler(),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    setTracer(provider.getTracer("t"), { parentBased: false });
    const inside = await runInTrace(remote, () => withSpan("s", {}, async () => currentTrace()));
    const [span] = exporter.getFinishedSpans();
    expect(span?.spanContext().traceId).toBe(remote.traceId);
    expect(inside?.spanId).toBe(span?.spanContext().spanId);
  });
});
