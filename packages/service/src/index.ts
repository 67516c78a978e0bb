export {
  COMMON_ENV,
  configuredResultInlineBytes,
  type GeodeConfig,
  loadConfig,
} from "./config.js";
export { checkDatabaseUrl } from "./database-url.js";
export { checkHttpTimeouts, type HttpTimeouts, httpServerOptions, httpTimeoutVars } from "./http-timeouts.js";
export { createLogger, LOG_REDACT_PATHS } from "./logger.js";
export {
  type CheckpointAgeSource,
  type LagSource,
  NO_OBSERVER,
  type ServiceObserver,
} from "./service-observer.js";
export {
  GEODE_VERSION,
  type RunningService,
  type RunServiceOptions,
  runService,
  type ServiceContext,
  type ServiceHealth,
  type ServiceTelemetry,
  type StartedTelemetry,
  serveHealth,
} from "./service-runtime.js";
