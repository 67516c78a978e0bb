import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type NatsServerProcess, startNatsServer } from "@geode/cli";
import { freePort } from "@geode/local-server";
import { type ConnectionOptions, connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
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
  /** `NATS_URL`, `NATS_USER` and `NATS_PASS` of one of the generated users (for the CLI, a process). */
  envOf(user: string): Record<string, string>;
  /** Every error (permission violations, above all) any of those connections saw, as `user: message`. */
  readonly violations: string[];
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
  const violations: string[] = [];
  return {
    server,
    users,
    violations,
    envOf(user) {
      const pass = passwords.get(user);
      if (pass === undefined) throw new Error(`no user ${user}`);
      return { NATS_URL: server.url, NATS_USER: user, NATS_PASS: pass };
    },
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
      // An event bus, for one, swallows publish failures: the connection's errors tell.
      void (async () => {
        for await (const s of nc.status())
          if (s.type === "error") violations.push(`${user}: ${s.error.message}`);
      })();
      return nc;
    },
    async stop() {
      for (const nc of open) await nc.close().catch(() => undefined);
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A test file's secured NATS (started before its tests, with the roles of `roles()`) and the
 * clean-ups it registers, run in reverse order before the server stops.
 */
export function useSecuredNats(roles: () => NatsRolesOptions): {
  secured: () => SecuredNats;
  as: (user: string) => Promise<NatsConnection>;
  stops: Array<() => Promise<void>>;
} {
  let secured: SecuredNats | undefined;
  const stops: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    secured = await startSecuredNats(roles());
  });
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await secured?.stop();
  });
  const ready = (): SecuredNats => {
    if (!secured) throw new Error("secured NATS is not ready");
    return secured;
  };
  return { secured: ready, as: (user) => ready().as(user), stops };
}
