import { ErrorCode, GeodeError, isErrorReply } from "@geode/contracts";
import { type MsgHdrs, type NatsConnection, RequestError, TimeoutError } from "@nats-io/transport-node";
import { decodeJson, encodeJson } from "./codec.js";

export interface RequestJsonOptions {
  /** Milliseconds to wait for the reply. */
  timeoutMs: number;
  /** Cancels the wait; the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  headers?: MsgHdrs;
}

/** Why a request failed below the application level. */
export type TransportFailure = "timeout" | "no_responders";

/** A transport-level failure with its kind, so callers can tell timeouts from absent responders. */
export class RequestFailedError extends GeodeError {
  override readonly name = "RequestFailedError";
  readonly failure: TransportFailure;
  readonly subject: string;
  constructor(failure: TransportFailure, subject: string, message: string, cause?: unknown) {
    super(failure === "timeout" ? ErrorCode.Timeout : ErrorCode.Unavailable, message, {
      cause,
      details: { subject },
    });
    this.failure = failure;
    this.subject = subject;
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/**
 * JSON request/reply. An error reply is rebuilt and thrown as GeodeError; a timeout or
 * no-responders answer throws RequestFailedError; an abort rejects with the signal's reason.
 */
export async function requestJson(
  nc: NatsConnection,
  subject: string,
  body: unknown,
  options: RequestJsonOptions,
): Promise<unknown> {
  const { signal } = options;
  if (signal?.aborted) throw abortReason(signal);
  const pending = nc.request(subject, encodeJson(body), {
    timeout: Math.max(1, Math.ceil(options.timeoutMs)),
    ...(options.headers ? { headers: options.headers } : {}),
  });
  let msg: Awaited<typeof pending>;
  try {
    if (signal) {
      let onAbort: (() => void) | undefined;
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(abortReason(signal));
        signal.addEventListener("abort", onAbort, { once: true });
      });
      try {
        msg = await Promise.race([pending, aborted]);
      } finally {
        if (onAbort) signal.removeEventListener("abort", onAbort);
        pending.catch(() => undefined);
      }
    } else {
      msg = await pending;
    }
  } catch (err) {
    if (err instanceof TimeoutError) {
      throw new RequestFailedError(
        "timeout",
        subject,
        `timed out after ${Math.ceil(options.timeoutMs)} ms`,
        err,
      );
    }
    if (err instanceof RequestError && err.isNoResponders()) {
      throw new RequestFailedError("no_responders", subject, "no responders", err);
    }
    throw err;
  }
  const decoded = decodeJson(msg.data);
  if (isErrorReply(decoded)) throw GeodeError.fromReply(decoded);
  return decoded;
}
