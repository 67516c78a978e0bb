import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, type NatsServerProcess, startNatsServer } from "@geode/cli";
import { type ConnectionOptions, connect, type NatsConnection } from "@nats-io/transport-node";
import {
  type NatsRolesOptions,
  type NatsUser,
  natsUsers,
  passwordEnv,
  renderNatsConfig,
} from "../infra/nats/nats-roles.js";

/** A second nats-server running the generated per-role configuration, on its own loopback port. */
export interface SecuredNats {
  readonly server: NatsServerProcess;
  readonly users: NatsUser[];
  /** Connects as one of the generated users (with its own inbox prefix); closed by `stop()`. */
  as(user: string, options?: Partial<ConnectionOptions>): Promise<NatsConnection>;
  stop(): Promise<void>;
}

export async function startSecuredNats(roles: NatsRolesOptions): Promise<SecuredNats> {
  const users = natsUsers(roles);
  const passwords = new Map(users.map((u) => [u.user, `p${randomBytes(12).toString("hex")}`]));
  const dir = mkdtempSync(path.join(tmpdir(), "geode-sec-"));
  const configFile = path.join(dir, "geode.conf");
  writeFileSync(configFile, renderNatsConfig(roles));
  const server = await startNatsServer({
    port: await freePort(),
    storeDir: path.join(dir, "js"),
    configFile,
    env: passwordEnv(users, (u) => passwords.get(u.user) ?? ""),
  });
  const open: NatsConnection[] = [];
  return {
    server,
    users,
    async as(user, options = {}) {
      const u = users.find((x) => x.user === user);
      if (!u) throw new Error(`no user ${user}`);
      const nc = await connect({
        servers: server.url,
        user,
        pass: passwords.get(user),
        inboxPrefix: u.inboxPrefix,
        ...options,
      });
      open.push(nc);
      return nc;
    },
    async stop() {
      for (const nc of open) await nc.close().catch(() => undefined);
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
