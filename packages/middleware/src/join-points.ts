import { type Correlation, sha256 } from "@geode/contracts";
import type { AuditTarget } from "./audit.js";
import { compose, type Terminal } from "./compose.js";
import { MiddlewareError, MiddlewareErrorCode } from "./errors.js";
import type { MiddlewareRegistry } from "./middleware-registry.js";
import { runRequestChain } from "./request-chain.js";
import type { DeepReadonly } from "./snapshot.js";
import {
  type AuditSink,
  JoinPoint,
  type LlmRequest,
  type LlmResponse,
  shapeProblem,
  type ToolCallRequest,
  type ToolCallResult,
} from "./types.js";

export interface RunOptions {
  correlation: Correlation;
  /** Receives one `extension_invoked` per middleware call. */
  events?: AuditSink | undefined;
  signal?: AbortSignal | undefined;
}

const never = new AbortController().signal;

function target(joinPoint: JoinPoint, name: string, options: RunOptions): AuditTarget {
  return { sink: options.events, joinPoint, name, correlation: options.correlation };
}

/** `tool_request`: ordered transforms of `{tool_name, arguments}`. The caller validates the result again. */
export function runToolRequest(
  registry: MiddlewareRegistry,
  request: ToolCallRequest,
  options: RunOptions,
): Promise<DeepReadonly<ToolCallRequest>> {
  return runRequestChain(registry.list(JoinPoint.ToolRequest), request, {
    target: target(JoinPoint.ToolRequest, request.tool_name, options),
    signal: options.signal ?? never,
    shapeProblem: shapeProblem.toolRequest,
  });
}

/** `tool_execution`: the onion around the approved terminal call. */
export function runToolExecution(
  registry: MiddlewareRegistry,
  request: ToolCallRequest | DeepReadonly<ToolCallRequest>,
  terminal: Terminal<ToolCallRequest, ToolCallResult>,
  options: RunOptions,
): Promise<ToolCallResult> {
  return compose(registry.list(JoinPoint.ToolExecution), terminal, {
    target: target(JoinPoint.ToolExecution, request.tool_name, options),
    signal: options.signal ?? never,
    shapeProblem: shapeProblem.toolResult,
  })(request);
}

/** The part of an LLM request whose change invalidates the provider's prompt cache. */
export function cachePrefixOf(request: DeepReadonly<LlmRequest> | LlmRequest): string {
  return sha256({ system: request.system ?? null, messages: request.messages, tools: request.tools ?? null });
}

/**
 * `llm_request`: ordered transforms. Changing the cache prefix (system, messages, tools) needs the
 * `allowCacheInvalidation` capability AND a non-empty `metadata.cache_invalidation_reason`.
 */
export function runLlmRequest(
  registry: MiddlewareRegistry,
  request: LlmRequest,
  options: RunOptions,
): Promise<DeepReadonly<LlmRequest>> {
  return runRequestChain<LlmRequest>(registry.list(JoinPoint.LlmRequest), request, {
    target: target(JoinPoint.LlmRequest, request.model, options),
    signal: options.signal ?? never,
    shapeProblem: shapeProblem.llmRequest,
    checkStep(before, after, reg) {
      if (cachePrefixOf(before) === cachePrefixOf(after)) return;
      const ctx = { middleware: reg.name, joinPoint: JoinPoint.LlmRequest };
      if (!reg.allowCacheInvalidation)
        throw new MiddlewareError(
          MiddlewareErrorCode.CacheInvalidationRefused,
          `llm_request middleware "${reg.name}" changed the cache prefix without allowCacheInvalidation`,
          ctx,
        );
      const reason = after.metadata?.["cache_invalidation_reason"];
      if (typeof reason !== "string" || reason.trim() === "")
        throw new MiddlewareError(
          MiddlewareErrorCode.CacheInvalidationRefused,
          `llm_request middleware "${reg.name}" changed the cache prefix without metadata.cache_invalidation_reason`,
          ctx,
        );
    },
  });
}

/** `llm_execution`: the onion around the adapter call; wrappers cannot change the adapter request. */
export function runLlmExecution(
  registry: MiddlewareRegistry,
  request: LlmRequest | DeepReadonly<LlmRequest>,
  terminal: Terminal<LlmRequest, LlmResponse>,
  options: RunOptions,
): Promise<LlmResponse> {
  return compose(registry.list(JoinPoint.LlmExecution), terminal, {
    target: target(JoinPoint.LlmExecution, request.model, options),
    signal: options.signal ?? never,
    shapeProblem: shapeProblem.llmResponse,
  })(request);
}
