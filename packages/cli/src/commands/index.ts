import type { Command } from "../command.js";
import { approvalsWatchCommand } from "./approvals.js";
import { docsCommand } from "./docs.js";
import { eventsTailCommand } from "./events.js";
import { handlersLsCommand, handlersRmCommand } from "./handlers.js";
import { pruneCommand } from "./prune.js";
import { receiptsLsCommand, receiptsResolveCommand, receiptsShowCommand } from "./receipts.js";
import { replayCommand } from "./replay.js";
import { schemaCommand } from "./schema.js";

/** Every `geode` sub-command. Add a command by adding its module here. */
export const COMMANDS: Command[] = [
  schemaCommand,
  docsCommand,
  handlersLsCommand,
  handlersRmCommand,
  approvalsWatchCommand,
  receiptsLsCommand,
  receiptsShowCommand,
  receiptsResolveCommand,
  replayCommand,
  eventsTailCommand,
  pruneCommand,
];
