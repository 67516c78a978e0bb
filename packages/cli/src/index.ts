export { runCli } from "./cli.js";
export type { Command, CommandIO } from "./command.js";
export { findNatsServerBinary, freePort, type NatsServerProcess, startNatsServer } from "./up/nats-server.js";
