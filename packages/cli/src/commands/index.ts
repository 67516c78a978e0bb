import type { Command } from "../command.js";
import { agentsAddCommand, agentsLsCommand, agentsRmCommand } from "./agents.js";
import { approvalsWatchCommand } from "./approvals.js";
import { connectClaudeCodeCommand } from "./connect.js";
import { consoleCommand } from "./console.js";
import { demoCommand } from "./demo.js";
import { docsCommand } from "./docs.js";
import { eventsTailCommand } from "./events.js";
import { handlersAddCommand, handlersLsCommand, handlersRmCommand } from "./handlers.js";
import { healthCommand } from "./health.js";
import { hookShimCommand } from "./hook-shim.js";
import { nsLsCommand, nsRmCommand } from "./ns.js";
import { pruneCommand } from "./prune.js";
import { receiptsLsCommand, receiptsResolveCommand, receiptsShowCommand } from "./receipts.js";
import { replayCommand } from "./replay.js";
import { schemaCommand } from "./schema.js";
import { upCommand } from "./up.js";

/** Every `geode` sub-command. Add a command by adding its module here. */
export const COMMANDS: Command[] = [
  demoCommand,
  schemaCommand,
  docsCommand,
  handlersAddCommand,
  handlersLsCommand,
  handlersRmCommand,
  healthCommand,
  upCommand,
  replayCommand,
  eventsTailCommand,
  pruneCommand,
  approvalsWatchCommand,
  receiptsLsCommand,
  receiptsShowCommand,
  receiptsResolveCommand,
  agentsAddCommand,
  agentsLsCommand,
  agentsRmCommand,
  nsLsCommand,
  nsRmCommand,
  connectClaudeCodeCommand,
  hookShimCommand,
  consoleCommand,
];
