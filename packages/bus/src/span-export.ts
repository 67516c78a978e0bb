/**
 * The OpenTelemetry SDK set up to export over OTLP/HTTP: used by `startTracing` (the spans made in
 * place) and by its span thread (the spans noted on the requests' path). Imported only when an
 * endpoint is set, so a process without one never loads the SDK.
 */
import type { Tracer } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { SpanTarget } from "./span-records.js";

/** How long a made span waits for its export at most, unless `OTEL_BSP_SCHEDULE_DELAY` says (ms). */
const SPAN_EXPORT_DELAY_MS = 200;

/**
 * The batch processor's settings that the environment leaves open. The SDK's own wait of up to
 * 5 s before an export keeps the spans of a quiet service long enough to outlive the young
 * generation of the heap, and every old one costs the collector again; 200 ms keeps them young.
 * The SDK reads every variable that is set itself.
 */
export function spanBatchConfig(env: NodeJS.ProcessEnv): { scheduledDelayMillis?: number } {
  return (env["OTEL_BSP_SCHEDULE_DELAY"] ?? "") === "" ? { scheduledDelayMillis: SPAN_EXPORT_DELAY_MS } : {};
}

/**
 * A provider whose spans carry `service.name` and `service.version` and leave over OTLP/HTTP (the
 * exporter reads the `OTEL_EXPORTER_OTLP_*` variables itself), its tracer (scope `geode`), and the
 * target that makes the spans noted on the requests' path the same way (`recordSpans`): the same
 * batch processor, resource and scope.
 */
export function exportingProvider(
  service: string,
  version: string,
  env: NodeJS.ProcessEnv,
): { provider: BasicTracerProvider; tracer: Tracer; target: SpanTarget } {
  const resource = resourceFromAttributes({ "service.name": service, "service.version": version });
  const processor = new BatchSpanProcessor(new OTLPTraceExporter(), spanBatchConfig(env));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  const scope = { name: "geode", version };
  return {
    provider,
    tracer: provider.getTracer(scope.name, scope.version),
    target: { processor, resource, scope },
  };
}
