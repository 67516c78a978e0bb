export { connectGeode } from "./connect.js";
export { telemetryObserver } from "./observe.js";
export { serviceTelemetry, telemetryInterceptors } from "./service-telemetry.js";
export { DEFAULT_METRICS_PORT, TELEMETRY_ENV, type TelemetryConfig } from "./telemetry-config.js";
export {
  newSpanId,
  newTraceContext,
  type TraceSampler,
  traceSamplerFollowsParent,
  traceSamplerFromEnv,
} from "./trace-ids.js";
export { tracePropagation } from "./trace-interceptors.js";
export { currentTrace, runInTrace, withSpan } from "./tracing.js";
