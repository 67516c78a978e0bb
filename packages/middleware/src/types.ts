import type { Correlation, ExtensionInvokedPayload } from "@geode/contracts";
import type { DeepReadonly } from "./snapshot.js";

/** The four join points, also the `surface` of their `extension_invoked` events. */
export const JoinPoint = {
  ToolRequest: "tool_request",
  ToolExecution: "tool_execution",
  LlmRequest: "llm_request",
  LlmExecution: "llm_execution",
} as const;
export type JoinPoint = (typeof JoinPoint)[keyof typeof JoinPoint];

/** Default time limit per middleware call, in ms (0 = none). */
export const DEFAULT_TIMEOUT_MS: Record<JoinPoint, number> = {
  tool_request: 10_000,
  tool_execution: 300_000,
  llm_request: 10_000,
  llm_execution: 900_000,
};

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** A tool call as the tool join points see it. */
export interface ToolCallRequest {
  tool_name: string;
  arguments: Record<string, unknown>;
}

/** What a tool terminal (or a short-circuiting wrapper) returns. */
export interface ToolCallResult {
  result: Record<string, unknown>;
  has_error: boolean;
}

/**
 * An LLM request. `system`, `messages` and `tools` are the cache prefix: a request middleware may
 * change them only with `allowCacheInvalidation` and a `metadata.cache_invalidation_reason`.
 */
export interface LlmRequest {
  model: string;
  provider?: string;
  system?: string;
  messages: unknown[];
  tools?: unknown[];
  metadata?: Record<string, unknown>;
  [extra: string]: unknown;
}

/** What an LLM adapter returns (any JSON object; `usage` is read when present). */
export type LlmResponse = Record<string, unknown>;

/** Shape checks: each returns what is wrong, or null. */
export const shapeProblem = {
  toolRequest(v: unknown): string | null {
    if (!isObject(v)) return "expected {tool_name, arguments}";
    const extra = Object.keys(v).filter((k) => k !== "tool_name" && k !== "arguments");
    if (extra.length > 0) return `unexpected fields: ${extra.join(", ")}`;
    if (typeof v["tool_name"] !== "string" || v["tool_name"] === "")
      return "tool_name must be a non-empty string";
    if (!isObject(v["arguments"])) return "arguments must be an object";
    return null;
  },
  toolResult(v: unknown): string | null {
    if (!isObject(v)) return "expected {result, has_error}";
    const extra = Object.keys(v).filter((k) => k !== "result" && k !== "has_error");
    if (extra.length > 0) return `unexpected fields: ${extra.join(", ")}`;
    if (!isObject(v["result"])) return "result must be an object";
    if (typeof v["has_error"] !== "boolean") return "has_error must be a boolean";
    return null;
  },
  llmRequest(v: unknown): string | null {
    if (!isObject(v)) return "expected an LLM request object";
    if (typeof v["model"] !== "string" || v["model"] === "") return "model must be a non-empty string";
    if (!Array.isArray(v["messages"])) return "messages must be an array";
    if (v["system"] !== undefined && typeof v["system"] !== "string") return "system must be a string";
    if (v["tools"] !== undefined && !Array.isArray(v["tools"])) return "tools must be an array";
    if (v["metadata"] !== undefined && !isObject(v["metadata"])) return "metadata must be an object";
    return null;
  },
  llmResponse(v: unknown): string | null {
    return isObject(v) ? null : "an LLM response must be an object";
  },
} as const;

/** What every middleware call receives besides the request. */
export interface MiddlewareContext {
  readonly correlation: Correlation;
  /** Aborts when the caller gives up; pass it on to anything long-running. */
  readonly signal: AbortSignal;
  readonly joinPoint: JoinPoint;
}

/** A request transform: returns the request for the next one (N → N+1); must not mutate its input. */
export type RequestMiddleware<Req> = (
  request: DeepReadonly<Req>,
  context: MiddlewareContext,
) => Req | DeepReadonly<Req> | Promise<Req | DeepReadonly<Req>>;

/**
 * Calls the rest of the onion once. Pass nothing (or the same request): an execution wrapper may
 * not change the request.
 */
export type Next<Req, Res> = (request?: Req | DeepReadonly<Req>) => Promise<Res>;

/** An execution wrapper: call `next` once, or return a result without calling it (short-circuit). */
export type ExecutionMiddleware<Req, Res> = (
  request: DeepReadonly<Req>,
  next: Next<Req, Res>,
  context: MiddlewareContext,
) => Promise<Res>;

export interface MiddlewareOptions {
  /** Unique per join point. */
  name: string;
  /** Ascending; ties by name. Request transforms run in this order; lower is the outer wrapper. */
  priority?: number;
  /** Time limit of one call in ms; 0 = none. Default: 10 s requests, 300 s tool, 900 s LLM execution. */
  timeoutMs?: number;
}

export interface LlmRequestMiddlewareOptions extends MiddlewareOptions {
  /** May change the cache prefix (system, messages, tools), with a reason in the result's metadata. */
  allowCacheInvalidation?: boolean;
}

/** One registration as the runners see it. */
export interface Registration<F> {
  readonly name: string;
  readonly priority: number;
  readonly timeoutMs: number;
  readonly allowCacheInvalidation: boolean;
  readonly fn: F;
}

/** Where `extension_invoked` goes (a RuntimeEventBus fits). */
export interface AuditSink {
  emit(event: "extension_invoked", payload: ExtensionInvokedPayload, correlation: Correlation): unknown;
}
