export { decodeJson, encodeJson, jsonDepth } from "./codec.js";
export {
  COMMON_ENV,
  configuredResultInlineBytes,
  DEFAULT_METRICS_PORT,
  type GeodeConfig,
  loadConfig,
  STREAM_REPLICA_COUNTS,
} from "./config.js";
export {
  type ConnectOptions,
  connectBus,
  connectGeode,
  type GeodeConnection,
  type NatsConnection,
} from "./connection.js";
export {
  ConfigError,
  type EnvSpec,
  type EnvVar,
  type EnvVarDoc,
  envSpec,
  envVar,
  read,
} from "./env-spec.js";
export { NatsUnavailableError } from "./errors.js";
export {
  type EventObserver,
  RuntimeEventBus,
  type RuntimeEventBusOptions,
  type TimelineObserver,
} from "./event-bus.js";
export { followConnection } from "./follow-connection.js";
export {
  createHookClient,
  DEFAULT_INVOKE_TIMEOUT_MS,
  type HookClient,
  type InvokeOptions,
} from "./hook-client.js";
export { checkHttpTimeouts, type HttpTimeouts, httpServerOptions, httpTimeoutVars } from "./http-timeouts.js";
export {
  type BusInterceptor,
  compose,
  interceptorsOf,
  type Next,
  type PublishInput,
  type RequestInput,
  type RequestTags,
  type ServeInput,
  useInterceptors,
} from "./interceptors.js";
export { createLogger, LOG_REDACT_PATHS, type Logger, silentLogger } from "./logger.js";
export {
  assertReplicasFit,
  BUCKET_HISTORY,
  type BucketName,
  clusterSize,
  configuredReplicas,
  ensureBucket,
  ensureCheckpointStream,
  ensureDurableConsumer,
  ensureEventStreams,
  ensureResultStore,
  isRevisionConflict,
  RESULT_STORE_DEFAULTS,
  STREAM_DEFAULTS,
  type StreamOptions,
} from "./provision.js";
export { repeatedHeader } from "./repeated-header.js";
export {
  RequestFailedError,
  type RequestJsonOptions,
  type RequestMsgOptions,
  requestJson,
  requestMsg,
  type TransportFailure,
} from "./request.js";
export {
  type RequestHandler,
  type Responder,
  type ServeRequestsOptions,
  serveRequests,
} from "./responder.js";
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
export { checkDatabaseUrl, checkNatsUrl, redactUrl } from "./urls.js";
export {
  checkWebhookUrl,
  guardedLookup,
  type HostResolver,
  type ResolvedAddress,
  resolveWebhookHost,
  WebhookTargetRefused,
  type WebhookUrlCheck,
} from "./webhook-target.js";
