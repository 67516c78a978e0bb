import { AsyncLocalStorage } from "node:async_hooks";
import {
  formatTraceparent,
  newTraceContext,
  parseTraceparent,
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
  type TraceContext,
} from "@geode/contracts";
import { type MsgHdrs, headers as natsHeaders } from "@nats-io/transport-node";
import {
  type Attributes,
  type Context,
  createTraceState,
  ROOT_CONTEXT,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";

/**
 * The trace a piece of work belongs to, carried across awaits: set when a request arrives (its
 * `traceparent`, or a new trace), read when a message goes out (requests, events), so every
 * message a request causes carries its trace without being passed by hand.
 */
const current = new AsyncLocalStorage<TraceContext>();

/** Where spans go; undefined (the default) makes `withSpan` a plain call. */
let tracer: Tracer | undefined;

/** The trace of the work running now, if any. */
export function currentTrace(): TraceContext | undefined {
  return current.getStore();
}

/** Runs `fn` as part of `ctx` (an incoming request's trace, or one a caller continues). */
export function runInTrace<T>(ctx: TraceContext, fn: () => T): T {
  return current.run(ctx, fn);
}

/** The trace an incoming message continues: its `traceparent` header, else a new one. */
export function traceOfHeaders(h: MsgHdrs | undefined): TraceContext {
  if (!h) return newTraceContext();
  return parseTraceparent(h.get(TRACEPARENT_HEADER), h.get(TRACESTATE_HEADER)) ?? newTraceContext();
}

/**
 * The trace an outgoing message belongs to: the current one; else the span a caller's own
 * OpenTelemetry context holds (a runtime instrumented with it); else, for a request, a new trace
 * (`start`), so the first component starts one.
 */
export function outgoingTrace(start: boolean): TraceContext | undefined {
  const own = current.getStore();
  if (own) return own;
  const sc = trace.getActiveSpan()?.spanContext();
  if (sc && trace.isSpanContextValid(sc))
    return {
      traceId: sc.traceId,
      spanId: sc.spanId,
      flags: sc.traceFlags.toString(16).padStart(2, "0"),
      ...(sc.traceState ? { state: sc.traceState.serialize() } : {}),
    };
  return start ? newTraceContext() : undefined;
}

/** Sets `traceparent` (and `tracestate`) of `ctx` on `h` (created when not given). */
export function setTraceHeaders(ctx: TraceContext, h: MsgHdrs = natsHeaders()): MsgHdrs {
  h.set(TRACEPARENT_HEADER, formatTraceparent(ctx));
  if (ctx.state) h.set(TRACESTATE_HEADER, ctx.state);
  return h;
}

/**
 * Whether the tracer's sampler follows the parent's sampled flag (`parentbased_*`, the SDK's
 * default): then a span under an unsampled parent would never be recorded, and `withSpan` skips it.
 */
let followsParent = true;

/**
 * Spans go to `t` from now on (`startTracing` sets the exporting one; tests an in-memory one).
 * `parentBased`: false when its sampler may record under an unsampled parent (`always_on`, …).
 */
export function setTracer(t: Tracer | undefined, options: { parentBased?: boolean } = {}): void {
  tracer = t;
  followsParent = options.parentBased ?? true;
}

/** The W3C sampled bit of a context's trace flags. */
function sampled(ctx: TraceContext): boolean {
  return (Number.parseInt(ctx.flags, 16) & 1) === 1;
}

function parentContext(ctx: TraceContext | undefined): Context {
  if (!ctx || ctx.root) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    traceFlags: Number.parseInt(ctx.flags, 16),
    isRemote: true,
    ...(ctx.state ? { traceState: createTraceState(ctx.state) } : {}),
  });
}

/**
 * Runs `fn` in a span named `name`, a child of the current trace, and makes the span the parent
 * of what `fn` sends. Without a tracer (OTEL_EXPORTER_OTLP_ENDPOINT unset), or under a parent
 * that is not sampled (with a parent-based sampler), it is `fn()` and nothing else. A throw marks
 * the span as an error and is rethrown.
 */
export async function withSpan<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  const t = tracer;
  if (!t) return fn();
  const parent = current.getStore();
  // Not recorded anyway: what `fn` sends keeps the parent's context, as with no tracer at all.
  if (followsParent && parent && !parent.root && !sampled(parent)) return fn();
  const span = t.startSpan(name, { attributes }, parentContext(parent));
  const sc = span.spanContext();
  const ctx: TraceContext = {
    traceId: sc.traceId,
    spanId: sc.spanId,
    flags: sc.traceFlags.toString(16).padStart(2, "0"),
    ...(parent?.state ? { state: parent.state } : {}),
  };
  try {
    return await current.run(ctx, fn);
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}
