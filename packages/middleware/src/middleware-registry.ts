import { MiddlewareError, MiddlewareErrorCode } from "./errors.js";
import {
  DEFAULT_TIMEOUT_MS,
  type ExecutionMiddleware,
  JoinPoint,
  type LlmRequest,
  type LlmRequestMiddlewareOptions,
  type LlmResponse,
  type MiddlewareOptions,
  type Registration,
  type RequestMiddleware,
  type ToolCallRequest,
  type ToolCallResult,
} from "./types.js";

export type ToolRequestMiddleware = RequestMiddleware<ToolCallRequest>;
export type ToolExecutionMiddleware = ExecutionMiddleware<ToolCallRequest, ToolCallResult>;
export type LlmRequestMiddleware = RequestMiddleware<LlmRequest>;
export type LlmExecutionMiddleware = ExecutionMiddleware<LlmRequest, LlmResponse>;

type Fn = ToolRequestMiddleware | ToolExecutionMiddleware | LlmRequestMiddleware | LlmExecutionMiddleware;

/**
 * The trusted middleware of one process: four typed join points. Registration order does not
 * matter; each join point runs in ascending priority (ties by name). A name is unique per join point.
 */
export class MiddlewareRegistry {
  private readonly lists = new Map<JoinPoint, Registration<Fn>[]>(
    Object.values(JoinPoint).map((jp) => [jp, []]),
  );

  /** Transforms a tool request before policy and schema validation. Returns the unregister function. */
  registerToolRequest(options: MiddlewareOptions, fn: ToolRequestMiddleware): () => void {
    return this.add(JoinPoint.ToolRequest, options, fn);
  }

  /** Wraps the approved tool terminal call. */
  registerToolExecution(options: MiddlewareOptions, fn: ToolExecutionMiddleware): () => void {
    return this.add(JoinPoint.ToolExecution, options, fn);
  }

  /** Transforms an LLM request before the adapter call. */
  registerLlmRequest(options: LlmRequestMiddlewareOptions, fn: LlmRequestMiddleware): () => void {
    return this.add(JoinPoint.LlmRequest, options, fn);
  }

  /** Wraps the LLM adapter call. */
  registerLlmExecution(options: MiddlewareOptions, fn: LlmExecutionMiddleware): () => void {
    return this.add(JoinPoint.LlmExecution, options, fn);
  }

  /** The registrations of one join point in run order. */
  list(joinPoint: typeof JoinPoint.ToolRequest): readonly Registration<ToolRequestMiddleware>[];
  list(joinPoint: typeof JoinPoint.ToolExecution): readonly Registration<ToolExecutionMiddleware>[];
  list(joinPoint: typeof JoinPoint.LlmRequest): readonly Registration<LlmRequestMiddleware>[];
  list(joinPoint: typeof JoinPoint.LlmExecution): readonly Registration<LlmExecutionMiddleware>[];
  list(joinPoint: JoinPoint): readonly Registration<Fn>[] {
    return [...(this.lists.get(joinPoint) ?? [])];
  }

  private add(joinPoint: JoinPoint, options: LlmRequestMiddlewareOptions, fn: Fn): () => void {
    const list = this.lists.get(joinPoint)!;
    const name = options.name;
    if (typeof name !== "string" || name.trim() === "")
      throw new TypeError(`${joinPoint} middleware needs a non-empty name`);
    if (list.some((r) => r.name === name)) {
      throw new MiddlewareError(
        MiddlewareErrorCode.DuplicateName,
        `${joinPoint} middleware "${name}" is already registered`,
        { middleware: name, joinPoint },
      );
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS[joinPoint];
    if (!Number.isInteger(timeoutMs) || timeoutMs < 0)
      throw new TypeError(`${joinPoint} middleware "${name}": timeoutMs must be a non-negative integer`);
    const reg: Registration<Fn> = Object.freeze({
      name,
      priority: options.priority ?? 0,
      timeoutMs,
      allowCacheInvalidation: options.allowCacheInvalidation === true,
      fn,
    });
    list.push(reg);
    list.sort((a, b) => a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return () => {
      const i = list.indexOf(reg);
      if (i >= 0) list.splice(i, 1);
    };
  }
}
