/**
 * The span thread of `startTracing`: makes the spans a service noted (`SpanRecord`s posted in
 * batches) with the OpenTelemetry SDK, exactly with the noted ids and times, and exports them over
 * OTLP/HTTP, so that neither the SDK's span objects, nor the export's serialization and HTTP
 * writes, run on the thread that answers requests. The exporter reads the OTLP variables itself.
 */
import { parentPort, workerData } from "node:worker_threads";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { makeSpans, PresetSpanIds } from "./span-records.js";
import { type SpanThreadData, type SpanThreadMessage, spanBatchConfig } from "./span-thread.js";

const port = parentPort;
if (!port) throw new Error("span-worker runs as a worker thread of startTracing");
const { service, version } = workerData as SpanThreadData;
const ids = new PresetSpanIds();
const provider = new BasicTracerProvider({
  idGenerator: ids,
  resource: resourceFromAttributes({ "service.name": service, "service.version": version }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(), spanBatchConfig(process.env))],
});
const tracer = provider.getTracer("geode", version);

port.on("message", (message: SpanThreadMessage) => {
  if (message.type === "spans") {
    makeSpans(tracer, ids, message.records);
    return;
  }
  // "stop": export what is left, then say so (the service's stop waits for it).
  void provider.shutdown().then(
    () => port.postMessage({ type: "stopped" }),
    () => port.postMessage({ type: "stopped" }),
  );
});
