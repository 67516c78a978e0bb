import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { GeodeConfig } from "./config.js";

export type { NatsConnection };

/** Connects to NATS with the configured credentials; reconnects forever once connected. */
export async function connectBus(
  config: Pick<GeodeConfig, "natsUrl" | "natsUser" | "natsPass" | "natsToken">,
  name: string,
): Promise<NatsConnection> {
  return connect({
    servers: config.natsUrl.split(",").map((s) => s.trim()),
    name,
    ...(config.natsUser !== undefined ? { user: config.natsUser, pass: config.natsPass } : {}),
    ...(config.natsToken !== undefined ? { token: config.natsToken } : {}),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // Without this, every request allocates two Error objects with captured stacks (a timeout and
    // a request error, thrown or not): a fifth of a hook-dispatcher's CPU under load. Our request
    // helpers rebuild their own typed errors, so the extra async stack is never shown anyway.
    noAsyncTraces: true,
  });
}
