import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { DEFAULT_DATABASE_URL, DEFAULT_NATS_URL, natsReachable, postgresReachable } from "./reachability.js";

declare module "vitest" {
  export interface ProvidedContext {
    natsUrl: string;
    databaseUrl: string;
  }
}

/**
 * Finds the NATS (JetStream) and PostgreSQL the tests talk to: `NATS_URL` / `DATABASE_URL`, else
 * the local defaults, else containers started with testcontainers when a Docker engine exists.
 * Fails loudly when none of these works: integration tests never silently skip.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  buildPackages();
  const stops: Array<() => Promise<unknown>> = [];
  let natsUrl = process.env["NATS_URL"] || DEFAULT_NATS_URL;
  let databaseUrl = process.env["DATABASE_URL"] || DEFAULT_DATABASE_URL;

  if (!(await natsReachable(natsUrl))) {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient().catch((cause: unknown) => {
      throw new Error(`NATS is not reachable at ${natsUrl} and no container runtime is available`, { cause });
    });
    const { NatsContainer } = await import("@testcontainers/nats");
    const c = await new NatsContainer("nats:2.10")
      .withJetStream()
      .withArg("user", "")
      .withArg("pass", "")
      .start();
    stops.push(() => c.stop());
    natsUrl = `nats://${c.getHost()}:${c.getMappedPort(4222)}`;
  }
  if (!(await postgresReachable(databaseUrl))) {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient().catch((cause: unknown) => {
      throw new Error(`PostgreSQL is not reachable at ${databaseUrl} and no container runtime is available`, {
        cause,
      });
    });
    const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
    const c = await new PostgreSqlContainer("postgres:15-alpine").withDatabase("test").start();
    stops.push(() => c.stop());
    databaseUrl = c.getConnectionUri();
  }
  project.provide("natsUrl", natsUrl);
  project.provide("databaseUrl", databaseUrl);
  return async () => {
    for (const stop of stops) await stop();
  };
}

/**
 * Compiles the packages and services (`tsc -b`, incremental: a few seconds when nothing changed),
 * so the tests that start services or the `geode` command run today's sources as the JavaScript
 * that production runs.
 */
function buildPackages(): void {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const r = spawnSync(process.execPath, [tsc, "-b", "tsconfig.build.json"], {
    cwd: path.resolve(import.meta.dirname, "../../.."), // the repository root
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`tsc -b tsconfig.build.json failed:\n${r.stdout}${r.stderr}`);
}
