export { type AuditTarget, audit } from "./audit.js";
export { type ComposeOptions, compose, type Terminal } from "./compose.js";
export { errorType, MiddlewareError, MiddlewareErrorCode } from "./errors.js";
export {
  cachePrefixOf,
  type RunOptions,
  runLlmExecution,
  runLlmRequest,
  runToolExecution,
  runToolRequest,
} from "./join-points.js";
export {
  type LlmExecutionMiddleware,
  type LlmRequestMiddleware,
  MiddlewareRegistry,
  type ToolExecutionMiddleware,
  type ToolRequestMiddleware,
} from "./middleware-registry.js";
export { type RequestChainOptions, runRequestChain } from "./request-chain.js";
export { type DeepReadonly, deepFreeze, snapshot, thaw } from "./snapshot.js";
export {
  type AuditSink,
  DEFAULT_TIMEOUT_MS,
  type ExecutionMiddleware,
  JoinPoint,
  type LlmRequest,
  type LlmRequestMiddlewareOptions,
  type LlmResponse,
  type MiddlewareContext,
  type MiddlewareOptions,
  type Next,
  type Registration,
  type RequestMiddleware,
  shapeProblem,
  type ToolCallRequest,
  type ToolCallResult,
} from "./types.js";
