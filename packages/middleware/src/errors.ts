/** Stable codes of middleware rule violations (docs/architecture.md#the-tool-boundary). */
export const MiddlewareErrorCode = {
  DuplicateName: "duplicate_middleware",
  InputMutated: "input_mutated",
  InvalidResult: "invalid_result",
  NextCalledTwice: "next_called_twice",
  RequestChanged: "request_changed",
  CacheInvalidationRefused: "cache_invalidation_refused",
  Timeout: "middleware_timeout",
} as const;
export type MiddlewareErrorCode = (typeof MiddlewareErrorCode)[keyof typeof MiddlewareErrorCode];

/** The short error type recorded as `reason` in `extension_invoked` (never the message). */
const REASONS: Record<MiddlewareErrorCode, string> = {
  duplicate_middleware: "DuplicateMiddleware",
  input_mutated: "InputMutated",
  invalid_result: "InvalidResult",
  next_called_twice: "NextCalledTwice",
  request_changed: "RequestChanged",
  cache_invalidation_refused: "CacheInvalidationRefused",
  middleware_timeout: "Timeout",
};

/** A broken middleware rule; `middleware` names the offender, `joinPoint` where it ran. */
export class MiddlewareError extends Error {
  override readonly name = "MiddlewareError";
  readonly code: MiddlewareErrorCode;
  readonly middleware: string;
  readonly joinPoint: string;

  constructor(
    code: MiddlewareErrorCode,
    message: string,
    context: { middleware: string; joinPoint: string; cause?: unknown },
  ) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.code = code;
    this.middleware = context.middleware;
    this.joinPoint = context.joinPoint;
  }
}

/** The audit reason of any error: the error type only, so no content leaks into the audit trail. */
export function errorType(err: unknown): string {
  if (err instanceof MiddlewareError) return REASONS[err.code];
  if (err instanceof Error) return err.name || "Error";
  return "Error";
}
