import { traceSamplerFollowsParent } from "@geode/contracts";
import { otlpTracesProtocol } from "./config.js";
import type { SpanRecord } from "./span-records.js";
import { SpanThread, spanThreadAvailable } from "./span-thread.js";
import { setTracer } from "./tracing.js";

/** The OTLP variables that turn span export on (the exporter reads the rest itself). */
const ENDPOINT_VARS = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] as const;

/**
 * Starts exporting spans over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces one) is
 * set; returns the function that flushes and stops it, or undefined when unset. The SDK and the
 * exporter are imported only then, so a process without an endpoint loads and pays nothing.
 *
 * The spans of requests (under a sampled parent, with a parent-based sampler: the usual case) are
 * noted on the request's path and made and exported by a worker thread of their own (span-worker.ts):
 * the request's thread never runs the SDK's span objects, the OTLP serialization or its HTTP
 * writes (run from the TypeScript sources, it makes them in its own thread, in batches). The few
 * spans that need the SDK's own decision (a trace that starts here, a sampler that
 * does not follow the parent) are made in place and exported from this thread.
 */
export async function startTracing(
  service: string,
  version: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<(() => Promise<void>) | undefined> {
  if (!ENDPOINT_VARS.some((v) => (env[v] ?? "") !== "")) return undefined;
  const { exportingProvider } = await import("./span-export.js");
  const serviceName = env["OTEL_SERVICE_NAME"] || service;
  const protocol = otlpTracesProtocol(env);
  const { provider, tracer, target } = exportingProvider(serviceName, version, protocol, env);
  const thread = spanThreadAvailable()
    ? new SpanThread({ service: serviceName, version, protocol }, env, (err) =>
        process.emitWarning(`span export thread failed, request spans are dropped: ${String(err)}`),
      )
    : undefined;
  // The SDK reads OTEL_TRACES_SAMPLER itself; withSpan needs to know only whether it follows the parent.
  setTracer(tracer, {
    parentBased: traceSamplerFollowsParent(env),
    target,
    ...(thread ? { sink: (records: SpanRecord[]) => thread.post(records) } : {}),
  });
  return async () => {
    setTracer(undefined); // hands the spans still noted to the thread first
    await Promise.all([thread?.stop(), provider.shutdown()]);
  };
}
