import type { TraceContext } from "@geode/contracts";
import {
  type Attributes,
  type Context,
  createTraceState,
  type HrTime,
  ROOT_CONTEXT,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import type { ReadableSpan, SpanProcessor } from "@opentelemetry/sdk-trace-base";

/**
 * A span that `withSpan` noted on a request's path, to be made later (in the service's thread, or in
 * the span thread of `startTracing`; see `recordSpans`): plain data, so it can be posted to a worker.
 */
export interface SpanRecord {
  name: string;
  attributes: Attributes;
  /** Its parent's context; one with `root` (a trace started here) makes it a root span. */
  parent: TraceContext;
  spanId: string;
  /** Wall-clock epoch milliseconds (fractional) of its start and end, as a maker gets them. */
  startMs: number;
  endMs: number;
  /** The error message when the work threw. */
  error: string | undefined;
}

/**
 * Where noted spans go once made: the span processor of the exporting provider (its batch
 * processor and OTLP exporter, or a test's in-memory one), with the resource and the
 * instrumentation scope that the provider's tracer gives the spans it makes itself.
 */
export interface SpanTarget {
  processor: Pick<SpanProcessor, "onEnd">;
  resource: ReadableSpan["resource"];
  scope: ReadableSpan["instrumentationScope"];
}

/**
 * Hands `records` to `target`'s processor as the finished spans the SDK's tracer makes of the same
 * work: `withSpan` notes only spans the sampler records, so they are recorded, with the noted ids,
 * parent (none for the first span of a trace started here), times, attributes and status, kind
 * internal, no events or links. Built directly instead of through the tracer's span start and end, which in a batch
 * cost several times more than the span itself (its sampler call, context, clock and limits
 * bookkeeping), for a result that is known in advance.
 */
export function recordSpans(target: SpanTarget, records: readonly SpanRecord[]): void {
  for (const r of records) target.processor.onEnd(readableSpan(r, target));
}

/** One noted span as the SDK's finished span (`ReadableSpan`). */
export function readableSpan(r: SpanRecord, target: Omit<SpanTarget, "processor">): ReadableSpan {
  const { parent } = r;
  const traceState = parent.state ? createTraceState(parent.state) : undefined;
  const context: SpanContext = {
    traceId: parent.traceId,
    spanId: r.spanId,
    traceFlags: TraceFlags.SAMPLED,
    ...(traceState ? { traceState } : {}),
  };
  // A trace started here (`root`): its first span has no parent; its id names no recorded span.
  const parentSpanContext: SpanContext | undefined = parent.root
    ? undefined
    : {
        traceId: parent.traceId,
        spanId: parent.spanId,
        traceFlags: Number.parseInt(parent.flags, 16),
        isRemote: true,
        ...(traceState ? { traceState } : {}),
      };
  const startTime = hrTime(r.startMs);
  const endTime = hrTime(r.endMs);
  return {
    name: r.name,
    kind: SpanKind.INTERNAL,
    spanContext: () => context,
    parentSpanContext,
    startTime,
    endTime,
    duration: hrTimeDuration(startTime, endTime),
    status:
      r.error === undefined
        ? { code: SpanStatusCode.UNSET }
        : { code: SpanStatusCode.ERROR, message: r.error },
    attributes: r.attributes,
    links: [],
    events: [],
    ended: true,
    resource: target.resource,
    instrumentationScope: target.scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/** `end - start` of two HrTimes, as the SDK computes a span's duration. */
function hrTimeDuration(start: HrTime, end: HrTime): HrTime {
  let seconds = end[0] - start[0];
  let nanos = end[1] - start[1];
  if (nanos < 0) {
    seconds -= 1;
    nanos += 1e9;
  }
  return [seconds, nanos];
}

/** Epoch milliseconds as [seconds, nanoseconds]. */
function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

/** The OpenTelemetry context of a parent from another process (ROOT for none). */
export function parentContext(ctx: TraceContext | undefined): Context {
  if (!ctx || ctx.root) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    traceFlags: Number.parseInt(ctx.flags, 16),
    isRemote: true,
    ...(ctx.state ? { traceState: createTraceState(ctx.state) } : {}),
  });
}
