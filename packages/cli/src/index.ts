export { type CapturedIO, captureIO, runCliCaptured } from "./capture-io.js";
export { findCommand, runCli } from "./cli.js";
export { type Command, type CommandIO, UsageError } from "./command.js";
export { findNatsServerBinary, freePort, type NatsServerProcess, startNatsServer } from "./up/nats-server.js";
