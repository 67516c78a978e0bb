/** The W3C Trace Context headers, carried on every NATS message a request causes. */
export const TRACEPARENT_HEADER = "traceparent";
export const TRACESTATE_HEADER = "tracestate";

/** One position in a trace (W3C Trace Context, version 00). */
export interface TraceContext {
  /** 32 lowercase hex digits, not all zero. */
  readonly traceId: string;
  /** The caller's span: 16 lowercase hex digits, not all zero. */
  readonly spanId: string;
  /** Trace flags, two hex digits (`01`: sampled). */
  readonly flags: string;
  /** The vendor-specific `tracestate`, passed on unchanged (absent when none came). */
  readonly state?: string | undefined;
  /** Started here (no caller had one): `spanId` names no recorded span, so spans start a root. */
  readonly root?: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);
/** tracestate: at most 32 list members; longer values are dropped rather than passed on. */
const TRACESTATE_MAX = 512;

/**
 * Reads a `traceparent` header (and its `tracestate`): null when absent or not valid, so a bad
 * header starts a new trace instead of failing the request. Version ff is invalid; a later
 * version is read by its first four fields, as the spec asks.
 */
export function parseTraceparent(
  traceparent: string | undefined | null,
  tracestate?: string | undefined | null,
): TraceContext | null {
  if (!traceparent || traceparent.length < 55) return null;
  const m = TRACEPARENT.exec(traceparent.trim());
  if (!m) return null;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  if (version === "ff" || (version === "00" && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  const state = tracestate && tracestate.length <= TRACESTATE_MAX ? tracestate.trim() : undefined;
  return { traceId, spanId, flags, ...(state ? { state } : {}) };
}

/** The `traceparent` value of a context. */
export function formatTraceparent(ctx: TraceContext): string {
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.flags}`;
}
