/**
 * The OpenTelemetry SDK set up to export over OTLP/HTTP: used by the span thread of `startTracing`
 * (the spans noted on the requests' path), and by `startTracing` itself in a process run from the
 * sources, which has no span thread. Imported only when an endpoint is set, so a process without
 * one never loads the SDK.
 */
import type { Tracer } from "@opentelemetry/api";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { OtlpProtocol } from "./otlp-protocol.js";
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
 * A provider whose spans carry `service.name` and `service.version` and leave over OTLP/HTTP in
 * `protocol` (`otlpTracesProtocol`; the exporter reads the other `OTEL_EXPORTER_OTLP_*` variables
 * itself), its tracer (scope `geode`), and the target that makes the spans noted on the requests'
 * path the same way (`recordSpans`): the same batch processor, resource and scope. Protobuf,
 * OpenTelemetry's default, serializes a batch with less CPU and fewer bytes than JSON.
 */
export function exportingProvider(
  service: string,
  version: string,
  protocol: OtlpProtocol,
  env: NodeJS.ProcessEnv,
): { provider: BasicTracerProvider; tracer: Tracer; target: SpanTarget } {
  const resource = resourceFromAttributes({ "service.name": service, "service.version": version });
  const exporter = protocol === "http/json" ? new JsonExporter() : new ProtobufExporter();
  const processor = new BatchSpanProcessor(exporter, spanBatchConfig(env));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  const scope = { name: "geode", version };
  return {
    provider,
    tracer: provider.getTracer(scope.name, scope.version),
    target: { processor, resource, scope },
  };
}
