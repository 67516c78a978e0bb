import path from "node:path";
import { redactUrl } from "@geode/bus";
import { findNatsServerBinary, freePort, portOpen } from "@geode/local-server";
import type { GeodeConfig } from "@geode/service";
import type { CommandIO } from "../command.js";
import { type NatsServerProcess, startNatsServer } from "./nats-server.js";

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/** Host and port of the first server of a (possibly comma-separated) NATS_URL. */
function firstServer(natsUrl: string): { host: string; port: number } {
  const first = (natsUrl.split(",")[0] ?? "").trim();
  const url = new URL(first.includes("://") ? first : `nats://${first}`);
  return { host: url.hostname, port: url.port === "" ? 4222 : Number(url.port) };
}

const NO_NATS = (url: string) =>
  `NATS is not reachable at ${url}, and no nats-server binary was found to start one.\n` +
  "Get one of:\n" +
  "  - Debian/Ubuntu: sudo apt-get install nats-server   (then run geode up again: it starts it for you)\n" +
  "  - Docker:        docker compose up -d nats           (then NATS_URL=nats://127.0.0.1:4222 geode up)\n" +
  "  - or point NATS_URL at a running nats-server with JetStream.\n";

/** The NATS `geode up` uses: the one at NATS_URL, or one it started (and stops at the end). */
export interface NatsPlan {
  url: string;
  embedded: NatsServerProcess | undefined;
}

/**
 * Uses the NATS at NATS_URL, or starts an embedded one when it is a loopback address nobody serves.
 * Returns an exit code after saying why when neither works.
 */
export async function ensureNats(config: GeodeConfig, io: CommandIO): Promise<NatsPlan | number> {
  const { host, port } = firstServer(config.natsUrl);
  if (await portOpen(port, host === "localhost" ? "127.0.0.1" : host.replace(/^\[|\]$/g, ""))) {
    return { url: config.natsUrl, embedded: undefined };
  }
  const binary = findNatsServerBinary(io.env);
  const shown = redactUrl(config.natsUrl, { maskUser: true });
  if (!LOOPBACK.has(host) || !binary) {
    io.err(
      LOOPBACK.has(host)
        ? NO_NATS(shown)
        : `NATS is not reachable at ${shown}.\n  Start it there, or set NATS_URL to a running nats-server with JetStream.\n`,
    );
    return 1;
  }
  const storeDir = path.resolve(".geode/nats");
  const usePort = (await portOpen(port)) ? await freePort() : port;
  io.out(`geode up: no NATS at ${shown}; starting ${binary} with JetStream in ${storeDir}\n`);
  try {
    const embedded = await startNatsServer({ binary, port: usePort, storeDir, tethered: true });
    return { url: embedded.url, embedded };
  } catch (err) {
    io.err(`geode up: could not start nats-server: ${err instanceof Error ? err.message : err}\n`);
    return 1;
  }
}
