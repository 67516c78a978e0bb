/**
 * The span thread of `startTracing`: makes the spans a service noted (`SpanRecord`s posted in
 * batches) into the OpenTelemetry SDK's finished spans, exactly with the noted ids and times, and
 * exports them with the SDK's batch processor over OTLP/HTTP, so that neither the span objects,
 * nor the export's serialization and HTTP writes, run on the thread that answers requests. The
 * exporter reads the OTLP variables itself.
 */
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import { exportingProvider } from "./span-export.js";
import { recordSpans } from "./span-records.js";
import {
  SPAN_THREAD_NICE,
  type SpanThreadData,
  type SpanThreadMessage,
  type SpanThreadReply,
} from "./span-thread.js";

/**
 * Lowers this thread's scheduling priority (Linux keeps one per thread; `/proc/thread-self` names
 * it), so that on busy cores the requests' work, and the processes it waits for, go first.
 * Elsewhere, or where it is refused, the thread keeps the process's priority.
 */
function yieldTheCores(): void {
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isSafeInteger(tid) && tid > 0) setPriority(tid, SPAN_THREAD_NICE);
  } catch {
    // not Linux, or not allowed
  }
}

const port = parentPort;
if (!port) throw new Error("span-worker runs as a worker thread of startTracing");
yieldTheCores();
const reply = (message: SpanThreadReply) => port.postMessage(message);
const { service, version, protocol } = workerData as SpanThreadData;
const { provider, target } = exportingProvider(service, version, protocol, process.env);

port.on("message", (message: SpanThreadMessage) => {
  if (message.type === "spans") {
    recordSpans(target, message.records);
    reply({ type: "made" });
    return;
  }
  // "stop": export what is left, then say so (the service's stop waits for it).
  void provider.shutdown().then(
    () => reply({ type: "stopped" }),
    () => reply({ type: "stopped" }),
  );
});
