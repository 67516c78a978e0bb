import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { followConnection } from "@geode/bus";
import { type NatsServerProcess, startNatsServer } from "@geode/cli";
import { freePort } from "@geode/local-server";
import { waitFor } from "@geode/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";

describe("followConnection", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "geode-follow-"));
  let nats: NatsServerProcess | undefined;
  let nc: NatsConnection | undefined;

  afterAll(async () => {
    await nc?.close().catch(() => undefined);
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("says when the server is lost and when the client is connected again", async () => {
    const port = await freePort();
    nats = await startNatsServer({ port, storeDir: path.join(dir, "js") });
    nc = await connect({ servers: nats.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
    const seen: Array<[boolean, string]> = [];
    followConnection(nc, (up, server) => seen.push([up, server]));

    await nats.stop();
    await waitFor(() => seen.length >= 1, 20_000);
    expect(seen[0]).toEqual([false, `127.0.0.1:${port}`]);

    nats = await startNatsServer({ port, storeDir: path.join(dir, "js") });
    await waitFor(() => seen.length >= 2, 20_000);
    expect(seen[1]?.[0]).toBe(true);
  }, 60_000);
});
