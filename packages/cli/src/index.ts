export { runCli } from "./cli.js";
export type { CommandIO, CommandModule, CommandSpec } from "./command.js";
export { findNatsServerBinary, freePort, type NatsServerProcess, startNatsServer } from "./up/nats-server.js";
