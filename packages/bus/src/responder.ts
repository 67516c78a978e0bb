import { type Codec, ErrorCode, ErrorKind, GeodeError, PROBE_HEADER, toGeodeError } from "@geode/contracts";
import { JetStreamApiError } from "@nats-io/jetstream";
import {
  ClosedConnectionError,
  ConnectionError,
  DrainingConnectionError,
  type Msg,
  type NatsConnection,
  NoRespondersError,
  RequestError,
  type Subscription,
  TimeoutError,
} from "@nats-io/transport-node";
import { decodeJson, encodeJson } from "./codec.js";
import {
  type BusConnection,
  type BusInterceptor,
  busParts,
  compose,
  type RequestTags,
  type ServeInput,
} from "./interceptors.js";
import type { Logger } from "./logger.js";

/**
 * What a failed handler replies: its typed error; `unavailable` when NATS itself failed under it (a
 * KV or stream operation that timed out or found no JetStream leader while a node was lost: the
 * caller may retry); anything else `internal`.
 */
export function replyError(err: unknown): GeodeError {
  if (err instanceof GeodeError) return err;
  const transport =
    err instanceof TimeoutError ||
    err instanceof NoRespondersError ||
    err instanceof RequestError ||
    err instanceof ClosedConnectionError ||
    err instanceof DrainingConnectionError ||
    err instanceof ConnectionError ||
    (err instanceof JetStreamApiError && err.status === 503);
  if (!transport) return toGeodeError(err);
  return new GeodeError(ErrorCode.Unavailable, `NATS unavailable: ${(err as Error).message}`, { cause: err });
}

/** `tags`: what the handler tells the interceptors about its request (see `ServeInput`). */
export type RequestHandler<T = unknown> = (
  request: T,
  msg: Msg,
  tags: RequestTags,
) => Promise<unknown> | unknown;

export interface Responder {
  readonly subject: string;
  readonly subscription: Subscription;
  /** Requests being handled now. */
  inFlight(): number;
  /** Stops taking new requests and waits for the ones in flight to be answered. */
  drain(): Promise<void>;
}

export interface ServeRequestsOptions<T> {
  queue?: string;
  log?: Logger;
  /**
   * The leg's request codec: a body of the wrong shape gets its error reply here and never reaches
   * `handler`. Without one, `handler` gets the decoded JSON as it is.
   */
  request?: Pick<Codec<T, unknown>, "decode">;
  /**
   * Runs once the handler settled (after a throw too), right before its reply is sent: messages
   * that must reach the server ahead of the reply, such as the request's audit events, which
   * then share the reply's socket write.
   */
  beforeReply?: (msg: Msg) => void;
  /** Added inside the connection's own (see `BusConnection`), for this subject only. */
  interceptors?: readonly BusInterceptor[];
}

const PROBE_REPLY = encodeJson({ probe: "ok" });

/**
 * The coded error that stands in for a reply over the server's `max_payload`: `internal`, because
 * the request was fine and the same request would produce the same reply (no retry helps).
 */
function replyTooLarge(bytes: number, maxPayload: number): GeodeError {
  return new GeodeError(
    ErrorCode.Internal,
    `reply of ${bytes} bytes exceeds the NATS max_payload of ${maxPayload} bytes`,
    { details: { kind: ErrorKind.ReplyTooLarge, bytes, max_payload: maxPayload } },
  );
}

/**
 * Sends a reply, or, when the server could not take it (over `max_payload`), the small coded error
 * in its place at once: the caller never waits out its timeout for a reply that was never sent.
 */
function sendReply(nc: NatsConnection, msg: Msg, data: Uint8Array, log: Logger | undefined): void {
  const maxPayload = nc.info?.max_payload;
  let body = data;
  if (maxPayload !== undefined && data.byteLength > maxPayload) {
    log?.warn({ subject: msg.subject, bytes: data.byteLength, max_payload: maxPayload }, "reply too large");
    body = encodeJson(replyTooLarge(data.byteLength, maxPayload).toReply());
  }
  try {
    msg.respond(body);
  } catch (err) {
    log?.warn({ err, subject: msg.subject }, "could not send reply");
    if (body !== data) return;
    // Refused for another reason (a limit that moved with a reconnect): still answer, small.
    try {
      msg.respond(
        encodeJson(
          new GeodeError(ErrorCode.Internal, `reply could not be sent: ${(err as Error).message}`).toReply(),
        ),
      );
    } catch {
      // closed meanwhile: nothing can be sent
    }
  }
}

/**
 * The one responder of the bus. Serves JSON requests on `subject`: decodes the body (not UTF-8,
 * not JSON or nested too deep is `invalid_request`), checks it with the leg's request codec, runs
 * `handler`, replies JSON. Any throw becomes a typed error reply (`{"error": {code, message}}`)
 * and the subscription keeps serving. A request with the probe header is answered
 * `{"probe": "ok"}` without reaching `handler`.
 */
export function serveRequests<T = unknown>(
  conn: BusConnection,
  subject: string,
  options: ServeRequestsOptions<T>,
  handler: RequestHandler<T>,
): Responder {
  const { nc, interceptors } = busParts(conn);
  const inflight = new Set<Promise<void>>();
  const decode = options.request ? options.request.decode : (body: unknown) => body as T;
  const { log, beforeReply } = options;
  // The handler settled (a throw too), then the work that goes out ahead of its reply: both inside
  // the interceptors, so what the handler and that work send is in the request's context.
  const served = async ({ msg, tags }: ServeInput): Promise<unknown> => {
    try {
      return await handler(decode(decodeJson(msg.data)), msg, tags);
    } finally {
      if (beforeReply) {
        try {
          beforeReply(msg);
        } catch (err) {
          log?.warn({ err, subject: msg.subject }, "before-reply work failed");
        }
      }
    }
  };
  const chain = compose([...interceptors, ...(options.interceptors ?? [])], "serve", served);
  const handle = async (msg: Msg): Promise<void> => {
    let reply: unknown;
    try {
      reply = await chain({ subject: msg.subject, msg, tags: {} });
    } catch (err) {
      const gerr = replyError(err);
      if (gerr.code === "internal") log?.error({ err, subject: msg.subject }, "request failed");
      reply = gerr.toReply();
    }
    if (msg.reply) sendReply(nc, msg, encodeJson(reply), log);
  };
  const subscription = nc.subscribe(subject, {
    ...(options.queue ? { queue: options.queue } : {}),
    callback: (err, msg) => {
      if (err) {
        options.log?.error({ err, subject }, "subscription error");
        return;
      }
      if (msg.headers?.get(PROBE_HEADER)) {
        try {
          msg.respond(PROBE_REPLY);
        } catch {
          // closed meanwhile: the prober counts the silence as an answer anyway
        }
        return;
      }
      const p = handle(msg).finally(() => inflight.delete(p));
      inflight.add(p);
    },
  });
  return {
    subject,
    subscription,
    inFlight: () => inflight.size,
    async drain() {
      if (!subscription.isClosed()) await subscription.drain();
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
    },
  };
}
