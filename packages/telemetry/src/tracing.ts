import { AsyncLocalStorage } from "node:async_hooks";
import {
  formatTraceparent,
  parseTraceparent,
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
  type TraceContext,
} from "@geode/contracts";
import { type MsgHdrs, headers as natsHeaders } from "@nats-io/transport-node";
import { type Attributes, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import { parentContext, recordSpans, type SpanRecord, type SpanTarget } from "./span-records.js";
import { newSpanId, newTraceContext, type TraceSampler } from "./trace-ids.js";

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

/** What makes the noted spans, a batch at a time; set by `setTracer`. */
let maker: ((records: SpanRecord[]) => void) | undefined;
/**
 * Set when spans are only noted, with no tracer in this thread (`startTracing` with its span
 * thread): decides the spans whose parent does not (a trace that starts here, or any span with a
 * sampler that does not follow the parent), as the SDK's sampler of the same variables would.
 */
let decide: TraceSampler | undefined;
/**
 * Spans ended on the hot path, to be made later (see `flushSpans`). Until then their `startMs`
 * and `endMs` are `performance.now()` readings; the flush turns them into wall-clock time.
 */
let noted: SpanRecord[] = [];
let flushTimer: ReturnType<typeof setTimeout> | undefined;
/** How many noted spans are made at once without waiting. */
const FLUSH_AT = 256;
/** How long a noted span waits at most (`setTracer`'s `flushAfterMs`). */
let flushAfterMs = 50;

export interface SetTracerOptions {
  /** False when its sampler may record under an unsampled parent (`always_on`, …). Default true. */
  parentBased?: boolean;
  /**
   * Where spans under a sampled parent from another process (the usual case: every request
   * carries one) are made: the request only notes its span (ids, times, attributes), and a batch
   * of them up to `flushAfterMs` later goes to this processor as the spans the tracer would have
   * made (`recordSpans`). Made in place, between a request's socket reads and writes, the SDK's
   * start and end of a span are a large share of a request's CPU (docs/benchmarks.md).
   */
  target?: SpanTarget;
  /**
   * Where the noted spans go instead of being made in this thread: `startTracing` posts them to
   * its span thread, which makes and exports them (`recordSpans`) off the requests' thread.
   */
  sink?: (records: SpanRecord[]) => void;
  /** The longest a noted span waits, ms. Default 50. */
  flushAfterMs?: number;
  /**
   * With a `sink` and no tracer: every span is noted, none made in this thread, and this decides
   * the spans the parent does not (`traceSamplerFromEnv` of the SDK's variables). A service then
   * never loads the SDK on the thread that answers requests.
   */
  sampler?: TraceSampler;
}

/**
 * Spans go to `t` from now on (`startTracing` sets the exporting one; tests an in-memory one).
 * With `target` or `sink`, spans under a sampled remote parent are noted and made in batches
 * (see `SetTracerOptions`); with a `sink` and a `sampler` instead of a tracer, all of them.
 * Spans noted under the previous tracer are made first; `setTracer(undefined)` turns spans off.
 */
export function setTracer(t: Tracer | undefined, options: SetTracerOptions = {}): void {
  flushSpans();
  tracer = t;
  followsParent = options.parentBased ?? true;
  const { target, sink, sampler } = options;
  decide = !t && sink && sampler ? sampler : undefined;
  maker =
    !t && !decide ? undefined : (sink ?? (target ? (records) => recordSpans(target, records) : undefined));
  flushAfterMs = options.flushAfterMs ?? 50;
}

/** Makes the noted spans now (or hands them to the sink); then they go the way of every span. */
export function flushSpans(): void {
  if (flushTimer !== undefined) clearTimeout(flushTimer);
  flushTimer = undefined;
  const spans = noted;
  noted = [];
  if (!maker || spans.length === 0) return;
  // Wall-clock time now minus the monotonic clock's reading, as the SDK takes it for each span it
  // times itself: a long-running service's clock is adjusted (NTP) while the monotonic one is not.
  const origin = Date.now() - performance.now();
  for (const r of spans) {
    r.startMs += origin;
    r.endMs += origin;
  }
  maker(spans);
}

function note(span: SpanRecord): void {
  noted.push(span);
  if (noted.length === FLUSH_AT) setImmediate(flushSpans);
  else if (flushTimer === undefined) {
    flushTimer = setTimeout(flushSpans, flushAfterMs);
    flushTimer.unref?.();
  }
}

/** The W3C sampled bit of a context's trace flags. */
function sampled(ctx: TraceContext): boolean {
  return (Number.parseInt(ctx.flags, 16) & 1) === 1;
}

/**
 * Runs `fn` in a span named `name`, a child of the current trace, and makes the span the parent
 * of what `fn` sends. `attributes` may still be added to until `fn` settles (an interceptor learns
 * some only from the reply). Without a tracer (OTEL_EXPORTER_OTLP_ENDPOINT unset), or under a parent
 * that is not sampled (with a parent-based sampler), it is `fn()` and nothing else: no promise of
 * its own, no extra turn of the microtask queue. A throw marks the span as an error and is rethrown.
 */
export function withSpan<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  const t = tracer;
  if (!t && !decide) return call(fn);
  const parent = current.getStore();
  if (followsParent && parent && !parent.root) {
    // Not recorded anyway: what `fn` sends keeps the parent's context, as with no tracer at all.
    if (!sampled(parent)) return call(fn);
    if (maker) return noteSpan(name, attributes, parent, fn);
  }
  if (decide) return noteDecided(decide, name, attributes, parent, fn);
  return spanInPlace(t as Tracer, name, attributes, parent, fn);
}

/**
 * A span whose recording the parent does not decide, with spans only noted (no tracer here): a
 * trace that starts here (no parent, or one this process started: its sampled flag is the
 * process sampler's decision) or a sampler that ignores the parent's flag decides by the trace id,
 * as the SDK's. Recorded, it is noted as a root span (a trace started here) or as the parent's
 * child; not recorded, `fn` runs under a new span id with flags `00`, as under the SDK's
 * non-recording span, and nothing is noted.
 */
function noteDecided<T>(
  sampler: TraceSampler,
  name: string,
  attributes: Attributes,
  parent: TraceContext | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  const from = parent ?? newTraceContext(sampler);
  const recorded = from.root ? sampled(from) : sampler(from.traceId);
  if (recorded) return noteSpan(name, attributes, from, fn);
  return current.run(childContext(from, newSpanId(), "00"), () => call(fn));
}

/** The context of a span `spanId` under `parent`: its trace, its trace state, `flags`. */
function childContext(parent: TraceContext, spanId: string, flags: string): TraceContext {
  return parent.state === undefined
    ? { traceId: parent.traceId, spanId, flags }
    : { traceId: parent.traceId, spanId, flags, state: parent.state };
}

/** `fn()`, a synchronous throw included as a rejection. */
function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}

/** A span the SDK makes as the work starts and ends it as the work settles. */
async function spanInPlace<T>(
  t: Tracer,
  name: string,
  attributes: Attributes,
  parent: TraceContext | undefined,
  fn: () => Promise<T>,
): Promise<T> {
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
    span.setAttributes(attributes);
    span.end();
  }
}

/**
 * `withSpan` under a sampled remote parent, with a parent-based sampler (so the SDK's decision is
 * known: record): picks the span's id, runs `fn` as its child, and notes the span for `flushSpans`.
 */
function noteSpan<T>(
  name: string,
  attributes: Attributes,
  parent: TraceContext,
  fn: () => Promise<T>,
): Promise<T> {
  const spanId = newSpanId();
  // Recorded: sampled, whatever the parent's flag (a sampler that ignores the parent may record
  // under an unrecorded one); the flags' other bits are the parent's.
  const flags = sampled(parent)
    ? parent.flags
    : (Number.parseInt(parent.flags, 16) | 1).toString(16).padStart(2, "0");
  const ctx = childContext(parent, spanId, flags);
  const startMs = performance.now();
  return current
    .run(ctx, () => call(fn))
    .then(
      (value) => {
        note({ name, attributes, parent, spanId, startMs, endMs: performance.now(), error: undefined });
        return value;
      },
      (err: unknown) => {
        const error = err instanceof Error ? err.message : String(err);
        note({ name, attributes, parent, spanId, startMs, endMs: performance.now(), error });
        throw err;
      },
    );
}
