import type { Command } from "../command.js";
import { docsCommand } from "./docs.js";
import { handlersLsCommand, handlersRmCommand } from "./handlers.js";
import { schemaCommand } from "./schema.js";

/** Every `geode` sub-command. Add a command by adding its module here. */
export const COMMANDS: Command[] = [schemaCommand, docsCommand, handlersLsCommand, handlersRmCommand];
