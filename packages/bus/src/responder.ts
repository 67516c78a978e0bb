import { toGeodeError } from "@geode/contracts";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { decodeJson, encodeJson } from "./codec.js";
import type { Logger } from "./logger.js";

export type RequestHandler = (body: unknown, msg: Msg) => Promise<unknown> | unknown;

export interface Responder {
  readonly subject: string;
  readonly subscription: Subscription;
  /** Requests being handled now. */
  inFlight(): number;
  /** Stops taking new requests and waits for the ones in flight to be answered. */
  drain(): Promise<void>;
}

/**
 * Serves JSON requests on `subject`: decodes the body, runs `handler`, replies JSON. Any throw
 * becomes a typed error reply (`{"error": {code, message}}`) and the subscription keeps serving.
 */
export function serveRequests(
  nc: NatsConnection,
  subject: string,
  options: {
    queue?: string;
    log?: Logger;
    /**
     * Runs once the handler settled (after a throw too), right before its reply is sent: messages
     * that must reach the server ahead of the reply, such as the request's audit events, which
     * then share the reply's socket write.
     */
    beforeReply?: (msg: Msg) => void;
  },
  handler: RequestHandler,
): Responder {
  const inflight = new Set<Promise<void>>();
  const handle = async (msg: Msg): Promise<void> => {
    let reply: unknown;
    try {
      reply = await handler(decodeJson(msg.data), msg);
    } catch (err) {
      const gerr = toGeodeError(err);
      if (gerr.code === "internal") options.log?.error({ err, subject: msg.subject }, "request failed");
      reply = gerr.toReply();
    }
    const data = encodeJson(reply);
    if (options.beforeReply) {
      try {
        options.beforeReply(msg);
      } catch (err) {
        options.log?.warn({ err, subject: msg.subject }, "before-reply work failed");
      }
    }
    if (msg.reply) {
      try {
        msg.respond(data);
      } catch (err) {
        options.log?.warn({ err, subject: msg.subject }, "could not send reply");
      }
    }
  };
  const subscription = nc.subscribe(subject, {
    ...(options.queue ? { queue: options.queue } : {}),
    callback: (err, msg) => {
      if (err) {
        options.log?.error({ err, subject }, "subscription error");
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
