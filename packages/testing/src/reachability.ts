import { connect } from "@nats-io/transport-node";
import pg from "pg";

export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";
export const DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test";

export async function natsReachable(url: string): Promise<boolean> {
  try {
    const nc = await connect({ servers: url, timeout: 2_000, reconnect: false });
    await nc.close();
    return true;
  } catch {
    return false;
  }
}

export async function postgresReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query("select 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
