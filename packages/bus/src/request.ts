import { type Codec, ErrorCode, GeodeError, isErrorReply, malformedReply } from "@geode/contracts";
import { createInbox, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { decodeJson, encodeJson } from "./codec.js";
import {
  type BusConnection,
  type BusInterceptor,
  busParts,
  compose,
  type Next,
  type RequestInput,
} from "./interceptors.js";
import type { RequestMsgOptions } from "./request-options.js";

export type { RequestMsgOptions } from "./request-options.js";

export interface RequestJsonOptions<T> extends RequestMsgOptions {
  /** The leg's reply codec; without one the decoded body is returned as it is. */
  reply?: Pick<Codec<T, unknown>, "decode">;
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

interface Waiter {
  subject: string;
  timeoutMs: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  resolve(msg: Msg): void;
  reject(err: unknown): void;
}

/**
 * One reply inbox per connection (`{inboxPrefix}.{nuid}.*`) shared by every request, like the
 * client's own request mux, but without what that one pays on every call: two Error objects with
 * captured stacks (one for the timeout, one when the request is settled). Errors are created only
 * when a request really fails.
 */
class RequestMux {
  private static readonly byConnection = new WeakMap<NatsConnection, RequestMux>();
  private readonly prefix: string;
  private readonly subscription: Subscription;
  private readonly pending = new Map<string, Waiter>();
  private next = 0;
  private dead = false;

  static of(nc: NatsConnection): RequestMux {
    let mux = RequestMux.byConnection.get(nc);
    if (!mux || mux.dead) {
      mux = new RequestMux(nc);
      RequestMux.byConnection.set(nc, mux);
    }
    return mux;
  }

  private constructor(private readonly nc: NatsConnection) {
    const inboxPrefix = (nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
    this.prefix = `${createInbox(inboxPrefix)}.`;
    this.subscription = nc.subscribe(`${this.prefix}*`, {
      callback: (err, msg) => {
        if (err) {
          // The inbox itself is refused (permissions): nothing can be answered through it.
          this.dead = true;
          this.failAll(() => err);
          return;
        }
        this.settle(msg);
      },
    });
    void this.subscription.closed.then(() => {
      this.dead = true;
      this.failAll(() => new GeodeError(ErrorCode.Unavailable, "connection closed"));
    });
    void this.watchPermissions();
  }

  request(subject: string, data: Uint8Array, options: RequestMsgOptions): Promise<Msg> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const token = (this.next++).toString(36);
    const timeoutMs = Math.max(1, Math.ceil(options.timeoutMs));
    return new Promise<Msg>((resolve, reject) => {
      let onAbort: (() => void) | undefined;
      const done = () => {
        this.pending.delete(token);
        if (waiter.timer !== undefined) clearTimeout(waiter.timer);
        if (onAbort) signal?.removeEventListener("abort", onAbort);
      };
      const waiter: Waiter = {
        subject,
        timeoutMs,
        timer: undefined,
        resolve: (msg) => {
          done();
          resolve(msg);
        },
        reject: (err) => {
          done();
          reject(err);
        },
      };
      this.pending.set(token, waiter);
      waiter.timer = setTimeout(
        () => waiter.reject(new RequestFailedError("timeout", subject, `timed out after ${timeoutMs} ms`)),
        Math.min(timeoutMs, MAX_TIMER_MS),
      );
      if (signal) {
        onAbort = () => waiter.reject(abortReason(signal));
        signal.addEventListener("abort", onAbort, { once: true });
      }
      try {
        this.nc.publish(subject, data, {
          reply: this.prefix + token,
          ...(options.headers ? { headers: options.headers } : {}),
        });
      } catch (err) {
        // Closed or draining connection, bad subject: fail now, as the client's request does.
        waiter.reject(err);
      }
    });
  }

  private settle(msg: Msg): void {
    const waiter = this.pending.get(msg.subject.slice(this.prefix.length));
    if (!waiter) return; // late: the request already timed out or was cancelled
    if (msg.data.length === 0 && msg.headers?.code === 503)
      waiter.reject(new RequestFailedError("no_responders", waiter.subject, "no responders"));
    else waiter.resolve(msg);
  }

  private failAll(error: () => unknown): void {
    for (const waiter of [...this.pending.values()]) waiter.reject(error());
  }

  /** A publish the server refuses (permissions) fails the requests to that subject at once. */
  private async watchPermissions(): Promise<void> {
    try {
      for await (const status of this.nc.status()) {
        if (this.dead) return;
        if (status.type !== "error") continue;
        const err = status.error as { operation?: string; subject?: string } | undefined;
        if (err?.operation !== "publish") continue;
        for (const waiter of [...this.pending.values()])
          if (waiter.subject === err.subject) waiter.reject(status.error);
      }
    } catch {
      // the connection closed: the subscription's close fails what is left
    }
  }
}

/** setTimeout's largest delay (about 24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Raw request/reply on the connection's shared reply inbox. A timeout or no-responders answer
 * rejects with RequestFailedError; an abort rejects with the signal's reason.
 */
export function requestMsg(
  conn: BusConnection,
  subject: string,
  data: Uint8Array,
  options: RequestMsgOptions,
): Promise<Msg> {
  return sendRequest(conn, { subject, body: undefined, data, options });
}

/** The client door's chain of each set of interceptors on each connection, composed once. */
const chains = new WeakMap<
  readonly BusInterceptor[],
  WeakMap<NatsConnection, Next<RequestInput, Promise<Msg>>>
>();

/** A request through `conn`'s interceptors (see `BusConnection`), then the shared reply inbox. */
function sendRequest(conn: BusConnection, input: RequestInput): Promise<Msg> {
  const { nc, interceptors } = busParts(conn);
  if (interceptors.length === 0) return send(nc, input);
  let byConnection = chains.get(interceptors);
  if (byConnection === undefined) {
    byConnection = new WeakMap();
    chains.set(interceptors, byConnection);
  }
  let chain = byConnection.get(nc);
  if (chain === undefined) {
    chain = compose(interceptors, "request", (i: RequestInput) => send(nc, i));
    byConnection.set(nc, chain);
  }
  try {
    return chain(input);
  } catch (err) {
    return Promise.reject(err);
  }
}

function send(nc: NatsConnection, input: RequestInput): Promise<Msg> {
  try {
    return RequestMux.of(nc).request(input.subject, input.data, input.options);
  } catch (err) {
    return Promise.reject(err); // a closed connection refuses the inbox subscription
  }
}

/**
 * The one JSON request of the bus: encodes `body`, waits for the reply, and decodes it with the
 * leg's reply codec. An error reply is rebuilt and thrown as GeodeError (its code and details
 * kept); a reply that is not JSON or not of the leg's shape throws `malformedReply` (`internal`,
 * kind `malformed_reply`); a timeout or no-responders answer throws RequestFailedError; an abort
 * rejects with the signal's reason.
 */
export async function requestJson<T = unknown>(
  conn: BusConnection,
  subject: string,
  body: unknown,
  options: RequestJsonOptions<T>,
): Promise<T> {
  const msg = await sendRequest(conn, { subject, body, data: encodeJson(body), options });
  let decoded: unknown;
  try {
    decoded = decodeJson(msg.data);
  } catch (err) {
    // "body is not valid JSON" → "reply is not valid JSON", and so on.
    throw malformedReply((err as Error).message.replace(/^body/, "reply"), err);
  }
  if (isErrorReply(decoded)) throw GeodeError.fromReply(decoded);
  return options.reply ? options.reply.decode(decoded) : (decoded as T);
}
