import { names as buildNames, type Names } from "@geode/contracts";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { NatsUnavailableError } from "./errors.js";
import type { BusInterceptor, InterceptedConnection } from "./interceptors.js";
import { NATS_ENV, type NatsConfig } from "./nats-config.js";

export type { NatsConnection };

/**
 * Connects to NATS with the configured credentials; reconnects forever once connected. A first
 * connection that fails throws NatsUnavailableError (one line, password masked, with a hint).
 */
export async function connectBus(
  config: Pick<NatsConfig, "natsUrl" | "natsUser" | "natsPass" | "natsToken">,
  name: string,
): Promise<NatsConnection> {
  try {
    return await connect({
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
  } catch (err) {
    throw new NatsUnavailableError(config.natsUrl, err);
  }
}

/**
 * What every client helper takes: a NATS connection, the deployment's names, and the interceptors
 * its requests, publishes and served requests run through (as `connectGeode` was given them).
 */
export interface GeodeConnection extends InterceptedConnection {
  nc: NatsConnection;
  names: Names;
}

export interface ConnectOptions {
  /** Default: `NATS_URL` or `nats://127.0.0.1:4222`. */
  natsUrl?: string;
  /** Default: `GEODE_NAMESPACE` or `geode`. */
  namespace?: string;
  /** Connection name shown by the server. */
  name?: string;
  user?: string;
  pass?: string;
  token?: string;
  /** Around every door of the connection, outermost first (`tracePropagation` of `@geode/telemetry`). */
  interceptors?: readonly BusInterceptor[];
}

/**
 * Connects to a deployment: credentials from `options`, else from the environment (`NATS_URL`,
 * `NATS_USER`/`NATS_PASS` or `NATS_TOKEN`, `GEODE_NAMESPACE`; see docs/operations.md).
 */
export async function connectGeode(
  options: ConnectOptions = {},
): Promise<GeodeConnection & { close(): Promise<void> }> {
  const env = NATS_ENV.parse(process.env);
  const nc = await connectBus(
    {
      natsUrl: options.natsUrl ?? env.natsUrl,
      natsUser: options.user ?? env.natsUser,
      natsPass: options.pass ?? env.natsPass,
      natsToken: options.token ?? env.natsToken,
    },
    options.name ?? "geode-sdk",
  );
  return {
    nc,
    names: buildNames(options.namespace ?? env.namespace),
    interceptors: options.interceptors ?? [],
    async close() {
      await nc.drain();
    },
  };
}
