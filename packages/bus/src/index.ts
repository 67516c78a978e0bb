export { decodeJson, encodeJson } from "./codec.js";
export { ConfigError, type GeodeConfig, loadConfig } from "./config.js";
export { connectBus, type NatsConnection } from "./connection.js";
export {
  type EventObserver,
  HookSystem,
  RuntimeEventBus,
  type RuntimeEventBusOptions,
  type TimelineObserver,
} from "./event-bus.js";
export { createLogger, LOG_REDACT_PATHS, type Logger, silentLogger } from "./logger.js";
export {
  type BucketName,
  ensureBucket,
  ensureEventStreams,
  isRevisionConflict,
  type StreamOptions,
} from "./provision.js";
export {
  RequestFailedError,
  type RequestJsonOptions,
  requestJson,
  requestMsg,
  type TransportFailure,
} from "./request.js";
export { type RequestHandler, type Responder, serveRequests } from "./responder.js";
export {
  GEODE_VERSION,
  type RunningService,
  runService,
  type ServiceContext,
  type ServiceHealth,
  serveHealth,
} from "./service-runtime.js";
