export { runCli } from "./cli.js";
export type { CommandIO, CommandModule, CommandSpec } from "./command.js";
export { COMMANDS } from "./commands/index.js";
export { type NatsServerProcess, startNatsServer } from "./up/nats-server.js";
