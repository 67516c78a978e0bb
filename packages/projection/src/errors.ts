import { ErrorCode, GeodeError } from "@geode/contracts";

/**
 * The projection database cannot be used right now: PostgreSQL is unreachable or failing, or the
 * embedded database is owned by a process that does not answer. The message is one line, names
 * the database without its password, and never carries a stack.
 */
export class ProjectionUnavailableError extends GeodeError {
  override readonly name = "ProjectionUnavailableError";
  /** What to do about it, one line (absent when there is nothing general to say). */
  readonly hint: string | undefined;

  constructor(
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown>; hint?: string } = {},
  ) {
    super(ErrorCode.Unavailable, message, options);
    this.hint = options.hint;
  }
}

/** What to do about a database that could not be opened, by the kind of failure. */
export function databaseHint(err: unknown): string | undefined {
  if (err instanceof AggregateError) return err.errors.length > 0 ? databaseHint(err.errors[0]) : undefined;
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "Check the host name in DATABASE_URL.";
  if (typeof code === "string" && code.startsWith("28"))
    return "Check the user and password in DATABASE_URL.";
  if (code === "3D000")
    return "Create that database (createdb <name>), or name one that exists in DATABASE_URL.";
  if (isConnectionError(err))
    return "Start PostgreSQL there, or fix DATABASE_URL (unset, the embedded database under .geode/pgdata is used).";
  return undefined;
}

/** `postgres://user:secret@host/db` → `postgres://user:***@host/db`: safe to print and log. */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparsable URL)";
  }
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * One line for an error from the database driver. Node reports a refused connect to a name with
 * several addresses as an AggregateError with an empty message, so its first inner error speaks.
 */
export function describeDbError(err: unknown): string {
  if (err instanceof AggregateError && err.message === "" && err.errors.length > 0)
    return describeDbError(err.errors[0]);
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    const message = err.message.split("\n")[0] || err.name;
    // SQLSTATE codes (five characters) add what the message may not say; errno codes are in it.
    return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !message.includes(code)
      ? `${message} (SQLSTATE ${code})`
      : message;
  }
  return String(err);
}

/**
 * True for failures of the connection rather than of the statement: refused or reset
 * connections, a server shutting down or starting up (SQLSTATE classes 08 and 57P), timeouts.
 */
export function isConnectionError(err: unknown): boolean {
  if (err instanceof AggregateError) return err.errors.some(isConnectionError);
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && (CONNECTION_CODES.has(code) || /^(08|57P)/.test(code))) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    err.message,
  );
}

/** The SQLSTATE of a driver error, when it has one (five characters). */
export function sqlStateOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * True when PostgreSQL refused a statement for the data in it, which no retry changes: a data
 * exception (class 22: a lone surrogate in jsonb, a number out of range), an integrity violation
 * (class 23), a value over a limit (class 54: an index row too large). Connection failures,
 * missing tables, locks and resources (08, 57, 42, 40, 53, …) are not: they are retried.
 */
export function isContentError(err: unknown): boolean {
  const code = sqlStateOf(err);
  return code !== undefined && /^(22|23|54)/.test(code);
}
