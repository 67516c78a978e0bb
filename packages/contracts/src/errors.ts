import { z } from "zod";

/** The wire error codes (docs/protocol.md#errors). Every failed request replies with one of these. */
export const ErrorCode = {
  InvalidRequest: "invalid_request",
  UnknownHook: "unknown_hook",
  InvalidPayload: "invalid_payload",
  DuplicateHandler: "duplicate_handler",
  UnknownTool: "unknown_tool",
  PolicyDenied: "policy_denied",
  SchemaInvalid: "schema_invalid",
  Indeterminate: "indeterminate",
  SessionPaused: "session_paused",
  BudgetExhausted: "budget_exhausted",
  Unavailable: "unavailable",
  Timeout: "timeout",
  Internal: "internal",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];
export const ERROR_CODES = Object.values(ErrorCode) as [ErrorCode, ...ErrorCode[]];
const ErrorCodeSchema = z.enum(ERROR_CODES);

/**
 * `details.kind` of an error, where the code alone does not say enough: `invalid_decision` is the
 * reply a handler SDK sends for a decision it refused (audited as `InvalidDecision`);
 * `malformed_reply` is a reply that was not what its leg promises (never sent, raised by a caller);
 * `reply_too_large` (code `internal`) is what a responder sends instead of a reply over the bus's
 * `max_payload`, with `details.bytes` and `details.max_payload`; `not_started` is what a tool
 * terminal replies when it never began the call (nothing was sent on, no effect), so the executor
 * gives the call's admission back and a retry with the same operation key may run it.
 */
export const ErrorKind = {
  InvalidDecision: "invalid_decision",
  MalformedReply: "malformed_reply",
  ReplyTooLarge: "reply_too_large",
  NotStarted: "not_started",
} as const;
export type ErrorKind = (typeof ErrorKind)[keyof typeof ErrorKind];

const ErrorReplySchema = z.strictObject({
  error: z.strictObject({
    code: ErrorCodeSchema,
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ErrorReply = z.infer<typeof ErrorReplySchema>;

/** A typed error with a stable wire code. Crosses the bus as `{"error": {code, message, details}}`. */
export class GeodeError extends Error {
  override readonly name: string = "GeodeError";
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details ?? {};
  }

  toReply(): ErrorReply {
    const error: ErrorReply["error"] = { code: this.code, message: this.message };
    if (Object.keys(this.details).length > 0) error.details = { ...this.details };
    return { error };
  }

  /** Rebuilds the typed error from an error reply received over the bus. */
  static fromReply(reply: ErrorReply): GeodeError {
    return new GeodeError(reply.error.code, reply.error.message, { details: reply.error.details ?? {} });
  }
}

/** True when a decoded reply body is an error reply. */
export function isErrorReply(body: unknown): body is ErrorReply {
  // Most replies are not errors: skip the schema (a failing parse costs more than a passing one).
  if (body === null || typeof body !== "object" || !("error" in body)) return false;
  return ErrorReplySchema.safeParse(body).success;
}

/** Turns any throw into a wire error: typed errors keep their code, anything else is `internal`. */
export function toGeodeError(err: unknown): GeodeError {
  if (err instanceof GeodeError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new GeodeError(ErrorCode.Internal, message || "internal error", { cause: err });
}

/** Renders zod issues as a short, stable message with paths, e.g. `payload.user_input: expected string`. */
export function describeIssues(error: z.ZodError, prefix = ""): string {
  return error.issues
    .slice(0, 8)
    .map((issue) => {
      const path = [prefix, ...issue.path.map(String)].filter((p) => p !== "").join(".");
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join("; ");
}

/** Parses `body` with `schema` or throws a GeodeError with `code` and a readable message. */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  body: unknown,
  code: ErrorCode,
  prefix = "",
): z.output<S> {
  const result = schema.safeParse(body);
  if (!result.success) {
    throw new GeodeError(code, describeIssues(result.error, prefix), {
      details: {
        issues: result.error.issues
          .slice(0, 8)
          .map((i) => ({ path: i.path.map(String), message: i.message })),
      },
    });
  }
  return result.data;
}
