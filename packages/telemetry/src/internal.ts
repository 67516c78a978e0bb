// The switches of tests and benchmarks (`@geode/telemetry/internal`): what a service never calls.
export { disableMetrics, enableMetrics, type Metrics, metrics, ServiceMetrics } from "./metrics.js";
export { type MetricsServer, serveMetrics } from "./metrics-server.js";
export type { SpanTarget } from "./span-records.js";
export { flushSpans, type SetTracerOptions, setTracer } from "./tracing.js";
export { startTracing } from "./tracing-setup.js";
