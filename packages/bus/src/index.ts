export { decodeJson, encodeJson, jsonDepth } from "./codec.js";
export {
  type ConnectOptions,
  connectBus,
  connectGeode,
  type GeodeConnection,
  type NatsConnection,
} from "./connection.js";
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
export {
  type BusConnection,
  type BusInterceptor,
  busParts,
  compose,
  type InterceptedConnection,
  type Next,
  type PublishInput,
  type RequestInput,
  type RequestTags,
  type ServeInput,
} from "./interceptors.js";
export { JetStreamPublisher, type JetStreamPublisherOptions } from "./jetstream-publisher.js";
export { type Logger, silentLogger } from "./logger.js";
export {
  NATS_VARS,
  type NatsConfig,
  natsCredentialsProblem,
  STREAM_REPLICA_COUNTS,
} from "./nats-config.js";
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
export { checkNatsUrl, redactUrl } from "./urls.js";
