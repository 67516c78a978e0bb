import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { findNatsServerBinary, portOpen } from "@geode/local-server";

export interface NatsServerOptions {
  /** Path of the binary; default `findNatsServerBinary()`. */
  binary?: string;
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** JetStream store directory (created if absent). */
  storeDir: string;
  /** A configuration file (e.g. the per-role users of infra/nats). */
  configFile?: string;
  /** Extra environment (e.g. the users' password variables). */
  env?: Record<string, string>;
  /**
   * Own process group, so a terminal's Ctrl-C reaches only the parent, which stops the server after
   * the services that use it have drained. Default false.
   */
  detached?: boolean;
  /**
   * Run it under `nats-tether` (in a process group of its own), which stops it when this process
   * dies, however it dies, after the processes named with `holdFor` have exited. Default false.
   */
  tethered?: boolean;
  /** How long to wait for the port to open. Default 10 s. */
  startTimeoutMs?: number;
}

export interface NatsServerProcess {
  readonly url: string;
  readonly port: number;
  /** The server's process, or its tether's when `tethered`. */
  readonly child: ChildProcess;
  /** Everything the server logged so far. */
  output(): string;
  /**
   * A process that uses this server (a service): should this process die, a tethered server stays
   * up until that one has exited, so it can drain into it. Nothing for a server that is not tethered.
   */
  holdFor(pid: number | undefined): void;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts a nats-server with JetStream as a child process and waits until it accepts connections. */
export async function startNatsServer(options: NatsServerOptions): Promise<NatsServerProcess> {
  const binary = options.binary ?? findNatsServerBinary();
  if (!binary) throw new Error("no nats-server binary found on PATH or in /usr/sbin");
  const host = options.host ?? "127.0.0.1";
  mkdirSync(options.storeDir, { recursive: true });
  const args = [
    ...(options.configFile ? ["-c", options.configFile] : []),
    "-a",
    host,
    "-p",
    String(options.port),
    "-js",
    "-sd",
    options.storeDir,
  ];
  const tethered = options.tethered ?? false;
  const child = spawn(
    tethered ? process.execPath : binary,
    tethered ? [...tetherNodeArgs(), binary, ...args] : args,
    {
      env: { ...process.env, ...options.env },
      stdio: tethered ? ["ignore", "pipe", "pipe", "ipc"] : ["ignore", "pipe", "pipe"],
      // The tether's group holds the server too: a SIGKILL of the group leaves neither behind.
      detached: tethered || (options.detached ?? false),
    },
  );
  let out = "";
  const collect = (chunk: Buffer) => {
    out = (out + chunk.toString("utf8")).slice(-20_000);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => {
      try {
        if (tethered && child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
        else child.kill("SIGKILL");
      } catch {
        // gone meanwhile
      }
    }, 5_000);
    await exited;
    clearTimeout(timer);
  };
  const holdFor = (pid: number | undefined) => {
    if (tethered && pid !== undefined && child.connected) child.send({ await_pid: pid }, () => undefined);
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 10_000);
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(`nats-server exited (${child.exitCode}) at start:\n${out.trim()}`);
    }
    if (await portOpen(options.port, host)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`nats-server did not open ${host}:${options.port} in time:\n${out.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://${host}:${options.port}`,
    port: options.port,
    child,
    output: () => out,
    stop,
    holdFor,
  };
}

/** Node's arguments that run `nats-tether` beside this module (its source through tsx's loader when this CLI runs from its own). */
function tetherNodeArgs(): string[] {
  const self = fileURLToPath(import.meta.url);
  const script = self.replace(/nats-server\.(ts|js)$/, "nats-tether.$1");
  return self.endsWith(".ts") ? ["--import", import.meta.resolve("tsx"), script] : [script];
}
