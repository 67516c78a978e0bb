import { connectBus, type GeodeConfig, loadConfig } from "@geode/bus";
import { names as buildNames, DEFAULT_NAMESPACE, type Names } from "@geode/contracts";
import type { NatsConnection } from "@nats-io/transport-node";

/** What every SDK helper takes: a NATS connection and the deployment's names. */
export interface GeodeConnection {
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
}

/** Connects to a deployment (credentials from options, else the environment of DESIGN §10). */
export async function connectGeode(
  options: ConnectOptions = {},
): Promise<GeodeConnection & { close(): Promise<void> }> {
  const env: GeodeConfig = loadConfig(process.env);
  const nc = await connectBus(
    {
      natsUrl: options.natsUrl ?? env.natsUrl,
      natsUser: options.user ?? env.natsUser,
      natsPass: options.pass ?? env.natsPass,
      natsToken: options.token ?? env.natsToken,
    },
    options.name ?? "geode-sdk",
  );
  const n = buildNames(options.namespace ?? env.namespace ?? DEFAULT_NAMESPACE);
  return {
    nc,
    names: n,
    async close() {
      await nc.drain();
    },
  };
}
