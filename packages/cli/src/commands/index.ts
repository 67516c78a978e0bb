import type { Command } from "../command.js";
import { demoCommand } from "./demo.js";
import { docsCommand } from "./docs.js";
import { healthCommand } from "./health.js";
import { schemaCommand } from "./schema.js";
import { upCommand } from "./up.js";

/** Every `geode` sub-command. Add a command by adding its module here. */
export const COMMANDS: Command[] = [demoCommand, schemaCommand, docsCommand, healthCommand, upCommand];
