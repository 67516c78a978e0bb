import { traceSamplerFollowsParent } from "@geode/contracts";
import { PresetSpanIds, setTracer } from "./tracing.js";

/** The OTLP variables that turn span export on (the exporter reads the rest itself). */
const ENDPOINT_VARS = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] as const;

/**
 * Starts exporting spans over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces one) is
 * set; returns the function that flushes and stops it, or undefined when unset. The SDK and the
 * exporter are imported only then, so a process without an endpoint loads and pays nothing.
 */
export async function startTracing(
  service: string,
  version: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<(() => Promise<void>) | undefined> {
  if (!ENDPOINT_VARS.some((v) => (env[v] ?? "") !== "")) return undefined;
  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] =
    await Promise.all([
      import("@opentelemetry/sdk-trace-base"),
      import("@opentelemetry/exporter-trace-otlp-http"),
      import("@opentelemetry/resources"),
    ]);
  // withSpan picks the ids of the spans it notes on the hot path; the SDK makes them later with those.
  const presetIds = new PresetSpanIds();
  const provider = new BasicTracerProvider({
    idGenerator: presetIds,
    resource: resourceFromAttributes({
      "service.name": env["OTEL_SERVICE_NAME"] || service,
      "service.version": version,
    }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // The SDK reads OTEL_TRACES_SAMPLER itself; withSpan needs to know only whether it follows the parent.
  setTracer(provider.getTracer("geode", version), {
    parentBased: traceSamplerFollowsParent(env),
    presetIds,
  });
  return async () => {
    setTracer(undefined); // makes the spans still noted first
    await provider.shutdown();
  };
}
