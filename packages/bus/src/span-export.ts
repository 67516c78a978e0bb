/**
 * The OpenTelemetry SDK set up to export over OTLP/HTTP: used by `startTracing` (the spans made in
 * place) and by its span thread (the spans noted on the requests' path). Imported only when an
 * endpoint is set, so a process without one never loads the SDK.
 */
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { PresetSpanIds } from "./span-records.js";

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
 * exporter reads the `OTEL_EXPORTER_OTLP_*` variables itself), with `ids` as its id generator so
 * that spans noted earlier are made with the ids their messages carried.
 */
export function exportingProvider(
  service: string,
  version: string,
  env: NodeJS.ProcessEnv,
): { provider: BasicTracerProvider; ids: PresetSpanIds } {
  const ids = new PresetSpanIds();
  const provider = new BasicTracerProvider({
    idGenerator: ids,
    resource: resourceFromAttributes({ "service.name": service, "service.version": version }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(), spanBatchConfig(env))],
  });
  return { provider, ids };
}
