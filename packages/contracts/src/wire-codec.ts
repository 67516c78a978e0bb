import type { z } from "zod";
import { describeIssues, ErrorCode, ErrorKind, GeodeError } from "./errors.js";
import { compiledParser } from "./schema-compiler.js";

/**
 * How deep any body on the wire may nest (objects and arrays). Deeper input is refused with
 * `invalid_request` before anything walks it; the hook sanitizer cuts payloads at depth 8 anyway.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * The encode/decode pair of one message of one wire leg. Bytes and JSON text are the bus's job;
 * a codec turns a decoded JSON body into a checked value and back.
 */
export interface Codec<T, In = T> {
  /** The zod schema of the message: the source of its JSON Schema and of `docs/protocol.md`. */
  readonly schema: z.ZodType<T, In>;
  /** Checks a decoded JSON body; a wrong shape throws a GeodeError (see the factories). */
  decode(body: unknown): T;
  /** The JSON value sent on the wire. */
  encode(value: In): unknown;
}

/** `describeIssues` plus the first issues as data, for an error reply's `details`. */
function issueDetails(error: z.ZodError): Record<string, unknown> {
  return {
    issues: error.issues.slice(0, 8).map((i) => ({ path: i.path.map(String), message: i.message })),
  };
}

/**
 * The codec of a request: a body of the wrong shape (a JSON array, `null`, a missing or unknown
 * field) is `code` (default `invalid_request`) with the issues in `details`. A body the schema
 * would return unchanged is taken as it is, without a schema pass (`compiledParser`).
 */
export function requestCodec<T, In>(
  schema: z.ZodType<T, In>,
  code: ErrorCode = ErrorCode.InvalidRequest,
): Codec<T, In> {
  const parse = compiledParser(schema);
  return {
    schema,
    decode(body) {
      const result = parse(body);
      if (result.success) return result.data;
      throw new GeodeError(code, describeIssues(result.error), { details: issueDetails(result.error) });
    },
    encode: (value) => value,
  };
}

/** A reply that is not what its leg promises (not JSON, or the wrong shape): `internal`, kind `malformed_reply`. */
export function malformedReply(message: string, cause?: unknown): GeodeError {
  return new GeodeError(ErrorCode.Internal, message, {
    cause,
    details: { kind: ErrorKind.MalformedReply },
  });
}

/** True for the error of a reply that was not what its leg promises. */
export function isMalformedReply(err: unknown): err is GeodeError {
  return err instanceof GeodeError && err.details["kind"] === ErrorKind.MalformedReply;
}

/**
 * The codec of a reply: a body of the wrong shape throws `malformedReply(message)`, so a caller
 * never acts on a reply it does not understand. A body the schema would return unchanged is taken
 * as it is (`compiledParser`).
 */
export function replyCodec<T, In>(schema: z.ZodType<T, In>, message: string): Codec<T, In> {
  const parse = compiledParser(schema);
  return {
    schema,
    decode(body) {
      const result = parse(body);
      if (result.success) return result.data;
      throw malformedReply(message, result.error);
    },
    encode: (value) => value,
  };
}
