import { randomBytes } from "node:crypto";
import type { TraceContext } from "@geode/contracts";

/** Whether a trace started here is recorded (`traceparent` flags `01`), decided by its id. */
export type TraceSampler = (traceId: string) => boolean;

const ALWAYS: TraceSampler = () => true;
const NEVER: TraceSampler = () => false;

/** `OTEL_TRACES_SAMPLER` as the OpenTelemetry SDK reads it: trimmed, lower case. */
function samplerName(env: Readonly<Record<string, string | undefined>>): string {
  return (env["OTEL_TRACES_SAMPLER"] ?? "").trim().toLowerCase();
}

/** The SDK's samplers that decide alone, whatever the parent's sampled flag says. */
const PARENT_BLIND = new Set(["always_on", "always_off", "traceidratio"]);

/**
 * Whether the SDK's sampler of `env` keeps the parent's decision: unset, `parentbased_*`, or a
 * name the SDK does not know (it falls back to its default, `parentbased_always_on`).
 */
export function traceSamplerFollowsParent(env: Readonly<Record<string, string | undefined>>): boolean {
  return !PARENT_BLIND.has(samplerName(env));
}

/**
 * The head sampler of the traces a process starts, from the OpenTelemetry variables
 * `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`, read as an OpenTelemetry SDK reads them. A
 * new trace has no parent, so the `parentbased_*` samplers decide by their root sampler; unset or
 * unknown is the SDK's default, `parentbased_always_on` (every trace). `traceidratio` takes the
 * ratio (0-1, default 1) and decides by the trace id as the SDK's `TraceIdRatioBasedSampler` does,
 * so a client and a service agree on the same trace.
 */
export function traceSamplerFromEnv(env: Readonly<Record<string, string | undefined>>): TraceSampler {
  const name = samplerName(env).replace(/^parentbased_/, "");
  if (name === "always_off") return NEVER;
  if (name !== "traceidratio") return ALWAYS;
  const arg = Number((env["OTEL_TRACES_SAMPLER_ARG"] ?? "").trim() || "1");
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  if (ratio >= 1) return ALWAYS;
  if (ratio <= 0) return NEVER;
  const bound = Math.floor(ratio * 0xffffffff);
  return (traceId) => {
    let acc = 0;
    for (let i = 0; i < traceId.length / 8; i++)
      acc = (acc ^ Number.parseInt(traceId.slice(i * 8, i * 8 + 8), 16)) >>> 0;
    return acc < bound;
  };
}

let processSampler: TraceSampler | undefined;

/**
 * Random bytes for ids, taken 4 KiB at a time: one `randomBytes` call costs about as much as
 * formatting 500 ids from a buffer, and every request and span needs one.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

/** `bytes` random bytes as lowercase hex, from the pool. */
function randomHex(bytes: number): string {
  if (used + bytes > pool.length) {
    pool = randomBytes(POOL_BYTES);
    used = 0;
  }
  const hex = pool.toString("hex", used, used + bytes);
  used += bytes;
  return hex;
}

/** A new random span id: 16 lowercase hex digits. */
export function newSpanId(): string {
  return randomHex(8);
}

/**
 * A new trace, recorded or not as `sampler` decides (default: this process's
 * `OTEL_TRACES_SAMPLER`, read once; unset, every trace is recorded by whoever exports spans
 * downstream). An unrecorded trace still travels: its id reaches every message and row.
 */
export function newTraceContext(sampler?: TraceSampler): TraceContext {
  const bytes = randomHex(24);
  const traceId = bytes.slice(0, 32);
  processSampler ??= traceSamplerFromEnv(process.env);
  const sampled = (sampler ?? processSampler)(traceId);
  return { traceId, spanId: bytes.slice(32, 48), flags: sampled ? "01" : "00", root: true };
}
