import type { BusInterceptor } from "@geode/bus";
import type { TraceContext } from "@geode/contracts";
import { outgoingTrace, runInTrace, setTraceHeaders, traceOfHeaders } from "./tracing.js";

/**
 * Continues the caller's trace in a served request (its `traceparent`, else a new one): the
 * handler, and everything it sends, run in it.
 */
export const incomingTrace: BusInterceptor = {
  serve(input, next) {
    return runInTrace(traceOfHeaders(input.msg.headers), () => next(input));
  },
};

/**
 * Writes the running work's trace on what leaves: every request carries one (a new trace when the
 * caller has none: the first component starts it), an event only the trace of the work that
 * emitted it; the recorder stores its trace id with the row.
 */
export const outgoingTraceHeaders: BusInterceptor = {
  request(input, next) {
    const trace = outgoingTrace(true) as TraceContext;
    return next({
      ...input,
      options: { ...input.options, headers: setTraceHeaders(trace, input.options.headers) },
    });
  },
  publish(input, next) {
    const trace = outgoingTrace(false);
    if (trace) setTraceHeaders(trace, input.headers);
    return next(input);
  },
};

/**
 * The trace context alone, both ways (no spans, no metrics): what a runtime's or a handler's
 * connection gets (`connectGeode`), so its requests start or continue traces.
 */
export function tracePropagation(): BusInterceptor[] {
  return [incomingTrace, outgoingTraceHeaders];
}
