import { Worker } from "node:worker_threads";

const WATCHDOG_GRACE_MS = 1_000;

/** A worker thread that SIGKILLs this process after `ms`, whatever its main thread is doing. */
function startWatchdog(ms: number): void {
  const code = `const { workerData } = require("node:worker_threads");
setTimeout(() => process.kill(workerData.pid, "SIGKILL"), workerData.ms);`;
  new Worker(code, { eval: true, workerData: { pid: process.pid, ms } }).unref();
}

/**
 * Resolves once the IPC channel to this process's parent closes. A supervisor (`geode up`, `geode
 * demo`) starts its services with such a channel; when it dies (SIGKILL, an OOM kill, a closed
 * terminal) the channel closes, and nobody else would stop the service. A process started without
 * a channel (directly, or as a container's PID 1) has nothing to watch: undefined.
 *
 * Call it at start-up, before the channel can have closed. The channel does not keep the process
 * alive; once it is gone, writes to the supervisor's (closed) stdout and stderr pipes are dropped
 * instead of failing with EPIPE, and the process exits `drainMs` later whatever it is doing (also
 * while it is still starting): nobody is left to stop it, and the NATS or database it drains
 * into may be going away too. A thread of its own kills the process a second later should the
 * main thread be too busy to run that timer (a long synchronous step, such as an embedded
 * database's work), so an orphan never lingers.
 */
export function supervisorGone(drainMs: number): Promise<void> | undefined {
  if (!process.channel) return undefined;
  const gone = new Promise<void>((resolve) => {
    process.once("disconnect", () => {
      for (const stream of [process.stdout, process.stderr]) stream.on("error", () => undefined);
      setTimeout(() => process.exit(1), drainMs).unref();
      startWatchdog(drainMs + WATCHDOG_GRACE_MS);
      resolve();
    });
  });
  // After the listener: adding it refs the channel, and an explicit unref wins over that count.
  process.channel.unref();
  return gone;
}
