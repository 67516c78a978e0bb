import { otlpTracesProtocol } from "./otlp-protocol.js";
import type { SpanRecord } from "./span-records.js";
import { SpanThread, spanThreadAvailable } from "./span-thread.js";
import { traceSamplerFollowsParent, traceSamplerFromEnv } from "./trace-ids.js";
import { setTracer } from "./tracing.js";

/** The OTLP variables that turn span export on (the exporter reads the rest itself). */
const ENDPOINT_VARS = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] as const;

/**
 * Starts exporting spans over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces one) is
 * set; returns the function that flushes and stops it, or undefined when unset. The SDK and the
 * exporter are imported only then, so a process without an endpoint loads and pays nothing.
 *
 * Spans are noted on the requests' path (ids, times, attributes; the sampling decision taken as
 * the SDK's sampler of the same variables takes it) and made and exported by a worker thread of
 * their own (span-worker.ts): the thread that answers requests never loads the SDK, its span
 * objects, the OTLP serialization or its HTTP writes; only loading the SDK there slows a fresh
 * dispatcher's calls measurably (docs/benchmarks.md). Run from the TypeScript sources (tsx's loader, which worker threads do
 * not get on Node 20), a process makes the spans in its own thread with the SDK.
 */
export async function startTracing(
  service: string,
  version: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<(() => Promise<void>) | undefined> {
  if (!ENDPOINT_VARS.some((v) => (env[v] ?? "") !== "")) return undefined;
  const serviceName = env["OTEL_SERVICE_NAME"] || service;
  const protocol = otlpTracesProtocol(env);
  // Whether the sampler of OTEL_TRACES_SAMPLER follows the parent; where the SDK makes the spans
  // (no span thread) it reads the sampler itself, else `traceSamplerFromEnv` decides as it would.
  const parentBased = traceSamplerFollowsParent(env);
  if (spanThreadAvailable()) {
    const thread = new SpanThread({ service: serviceName, version, protocol }, env, (err) =>
      process.emitWarning(`span export thread failed, request spans are dropped: ${String(err)}`),
    );
    setTracer(undefined, {
      parentBased,
      sink: (records: SpanRecord[]) => thread.post(records),
      sampler: traceSamplerFromEnv(env),
    });
    return async () => {
      setTracer(undefined); // hands the spans still noted to the thread first
      await thread.stop();
    };
  }
  const { exportingProvider } = await import("./span-export.js");
  const { provider, tracer, target } = exportingProvider(serviceName, version, protocol, env);
  setTracer(tracer, { parentBased, target });
  return async () => {
    setTracer(undefined); // makes the spans still noted first
    await provider.shutdown();
  };
}
