import type { Msg, MsgHdrs, NatsConnection } from "@nats-io/transport-node";
import type { RequestMsgOptions } from "./request-options.js";

/** The rest of a chain, from one interceptor's point of view. */
export type Next<I, O> = (input: I) => O;

/**
 * What a served request carries through the server door's chain. `tags` are what the handler
 * learned about its request that only it can tell (the tool it resolved a name to): the handler
 * gets them as its third argument and the interceptors read them once `next` settled.
 */
export interface ServeInput {
  readonly subject: string;
  readonly msg: Msg;
  readonly tags: RequestTags;
}

/** Labels a handler gives its request for the interceptors (values kept few: they may name series). */
export type RequestTags = Record<string, string>;

/** An outgoing request at the client door: `body` is the JSON body before encoding (none for raw data). */
export interface RequestInput {
  readonly subject: string;
  readonly body: unknown;
  readonly data: Uint8Array;
  readonly options: RequestMsgOptions;
}

/**
 * A message the event publisher sends (a runtime event, a timeline record), when it is emitted:
 * `headers` go with every attempt to send it; the result is whether JetStream stored it.
 */
export interface PublishInput {
  readonly subject: string;
  /** Its `Nats-Msg-Id`: JetStream stores a message sent again with it once. */
  readonly id: string;
  readonly data: Uint8Array;
  readonly headers: MsgHdrs;
}

/**
 * Cross-cutting work around the bus's doors (trace context, spans, metrics; `@geode/telemetry`
 * installs its own): each method wraps the rest of the chain, `next`, and returns what it returns.
 * Every method is optional; a chain is composed once with `compose` (temporal's interceptors).
 */
export interface BusInterceptor {
  /** Around one served request: decoding, the handler, and the work before its reply is sent. */
  serve?(input: ServeInput, next: Next<ServeInput, Promise<unknown>>): Promise<unknown>;
  /** Around one request sent and its reply (or failure) received. */
  request?(input: RequestInput, next: Next<RequestInput, Promise<Msg>>): Promise<Msg>;
  /** Around one event published, from its emit until JetStream stored it or it was given up on. */
  publish?(input: PublishInput, next: Next<PublishInput, Promise<boolean>>): Promise<boolean>;
}

type Door = keyof BusInterceptor;
type Chain<D extends Door> = NonNullable<BusInterceptor[D]>;
type DoorNext<D extends Door> = Next<Parameters<Chain<D>>[0], ReturnType<Chain<D>>>;

/**
 * The one chain of door `door` around `last`: the first interceptor is the outermost. Without an
 * interceptor for that door it is `last` itself, so a bus without any pays nothing.
 */
export function compose<D extends Door>(
  interceptors: readonly BusInterceptor[],
  door: D,
  last: DoorNext<D>,
): DoorNext<D> {
  let next = last;
  for (let i = interceptors.length - 1; i >= 0; i--) {
    const interceptor = interceptors[i] as BusInterceptor;
    const method = interceptor[door] as ((input: unknown, next: unknown) => unknown) | undefined;
    if (method === undefined) continue;
    const inner = next;
    next = ((input: unknown) => method.call(interceptor, input, inner)) as DoorNext<D>;
  }
  return next;
}

const NONE: readonly BusInterceptor[] = [];

/**
 * A NATS connection with the interceptors its doors run: what `connectGeode` returns and what
 * `runService` hands a service as `bus`. Interceptors are passed in, never registered anywhere:
 * a door given a bare `NatsConnection` runs none.
 */
export interface InterceptedConnection {
  readonly nc: NatsConnection;
  /** Outermost first; none when absent. */
  readonly interceptors?: readonly BusInterceptor[] | undefined;
}

/** What every door of the bus takes: a bare connection (no interceptors) or one with its own. */
export type BusConnection = NatsConnection | InterceptedConnection;

/** The connection and the interceptors of `conn`. */
export function busParts(conn: BusConnection): {
  readonly nc: NatsConnection;
  readonly interceptors: readonly BusInterceptor[];
} {
  if ("nc" in conn) return { nc: conn.nc, interceptors: conn.interceptors ?? NONE };
  return { nc: conn, interceptors: NONE };
}
