import { followConnection } from "@geode/bus";
import type { NatsConnection } from "@nats-io/transport-node";

/** Whether the console's NATS connection is up, followed from its status events. */
export interface NatsState {
  /** Null while connected; else the sentence a 503 says: which NATS is gone and how to start it. */
  down(): string | null;
}

/**
 * Follows `nc`'s status (the client reconnects by itself): while it is disconnected, every API
 * route answers 503 with one sentence naming the NATS that is gone, instead of each request
 * timing out on its own with a message that does not say why.
 */
export function followNats(nc: NatsConnection): NatsState {
  let lost: string | null = null;
  followConnection(nc, (up, server) => {
    lost = up ? null : server;
  });
  return {
    down: () =>
      nc.isClosed()
        ? "the console's NATS connection is closed: restart geode console"
        : lost === null
          ? null
          : `NATS at nats://${lost} is not reachable: start the plane with \`geode up\``,
  };
}
