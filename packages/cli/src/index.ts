export { findCommand, runCli } from "./cli.js";
export { type Command, type CommandIO, UsageError } from "./command.js";
