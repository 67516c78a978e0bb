/**
 * Runs a nats-server for `geode up` (or `geode demo`) and ties its life to theirs:
 * `node nats-tether.js <binary> <args…>`, started with an IPC channel. nats-server cannot notice
 * that the process that started it is gone; this process can, because its channel closes then.
 *
 * - SIGTERM and SIGINT are passed on to the server; this process exits with the server's code.
 * - `{"await_pid": N}` on the channel names a process that uses the server (a service).
 * - When the channel closes (the parent died: SIGKILL, OOM, a closed terminal), it waits until the
 *   named processes have exited (they drain by themselves, into this server), at most `AWAIT_MS`,
 *   then stops the server: SIGTERM, SIGKILL after `KILL_AFTER_MS`.
 *
 * The server's output is passed on while the parent reads it, and dropped after.
 */
import { spawn } from "node:child_process";

/** A little longer than a service's own drain deadline (GEODE_SHUTDOWN_TIMEOUT_MS, 10 s by default). */
const AWAIT_MS = 12_000;
const KILL_AFTER_MS = 5_000;
const POLL_MS = 100;

const [binary, ...args] = process.argv.slice(2);
if (!binary) {
  process.stderr.write("usage: nats-tether <nats-server binary> [args…]\n");
  process.exit(2);
}

const server = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
let parentGone = false;
for (const [from, to] of [
  [server.stdout, process.stdout],
  [server.stderr, process.stderr],
] as const) {
  to.on("error", () => undefined);
  from.on("data", (chunk: Buffer) => {
    if (!parentGone) to.write(chunk);
  });
}
server.once("error", (err) => {
  process.stderr.write(`nats-tether: ${err.message}\n`);
  process.exit(1);
});
server.once("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => server.kill(signal));

const users = new Set<number>();
process.on("message", (m: unknown) => {
  const pid = (m as { await_pid?: unknown } | null)?.await_pid;
  if (typeof pid === "number" && Number.isInteger(pid) && pid > 0) users.add(pid);
});

/** True while the process exists (EPERM: it does, as another user). Here, not imported: the tether imports nothing, to start fast and stay small. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

process.once("disconnect", () => {
  parentGone = true;
  const deadline = Date.now() + AWAIT_MS;
  const poll = setInterval(() => {
    if ([...users].some(alive) && Date.now() < deadline) return;
    clearInterval(poll);
    server.kill("SIGTERM");
    setTimeout(() => server.kill("SIGKILL"), KILL_AFTER_MS).unref();
  }, POLL_MS);
});
