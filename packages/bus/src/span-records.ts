import { newSpanId, newTraceId, type TraceContext } from "@geode/contracts";
import {
  type Attributes,
  type Context,
  createTraceState,
  type HrTime,
  ROOT_CONTEXT,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";

/**
 * A span that `withSpan` noted on a request's path, to be made with the SDK later (in the service's
 * thread, or in the span thread of `startTracing`): plain data, so it can be posted to a worker.
 */
export interface SpanRecord {
  name: string;
  attributes: Attributes;
  parent: TraceContext;
  spanId: string;
  /** Wall-clock epoch milliseconds (fractional) of its start and end, as a maker gets them. */
  startMs: number;
  endMs: number;
  /** The error message when the work threw. */
  error: string | undefined;
}

/**
 * The span ids that `withSpan` chose itself, handed to the SDK when it makes the span later: give
 * it to the provider as its `idGenerator`. Ids not preset are random, as the SDK's own generator
 * makes them.
 */
export class PresetSpanIds {
  private next: string | undefined;

  /** The id the SDK's next span gets. */
  preset(spanId: string): void {
    this.next = spanId;
  }

  generateSpanId(): string {
    const id = this.next;
    this.next = undefined;
    return id ?? newSpanId();
  }

  generateTraceId(): string {
    return newTraceId();
  }
}

/** Makes `records` with `tracer`, whose provider has `ids` as its id generator. */
export function makeSpans(tracer: Tracer, ids: PresetSpanIds, records: readonly SpanRecord[]): void {
  for (const r of records) {
    ids.preset(r.spanId);
    const span = tracer.startSpan(
      r.name,
      { attributes: r.attributes, startTime: hrTime(r.startMs) },
      parentContext(r.parent),
    );
    if (r.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: r.error });
    span.end(hrTime(r.endMs));
  }
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
