import { readFileSync } from "node:fs";
import { type CommandIO, type CommandSpec, failureText, UsageError } from "./command.js";
import { COMMANDS } from "./commands/index.js";

/** The CLI's own version, from its package.json (one level above both `src/` and `dist/`). */
function cliVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

function commandLines(commands: CommandSpec[]): string {
  const width = Math.max(...commands.map((c) => c.path.join(" ").length));
  return commands.map((c) => `  ${c.path.join(" ").padEnd(width)}  ${c.summary}`).join("\n");
}

function helpText(commands: CommandSpec[]): string {
  return `geode — operate the GEODE extension plane\n\nUsage: geode <command> [options]\n\nCommands:\n${commandLines(commands)}\n\nRun 'geode <command> --help' for a command's usage, 'geode --version' for the version.\n`;
}

/** The commands of one group (`geode receipts …`), for `geode receipts` alone or a sub-command it lacks. */
function groupHelpText(group: string, commands: CommandSpec[]): string {
  return `Usage: geode ${group} <command> [options]\n\nCommands:\n${commandLines(commands)}\n\nRun 'geode ${group} <command> --help' for a command's usage.\n`;
}

/** Finds the command whose path is the longest prefix of `argv`. */
export function findCommand(
  argv: string[],
  commands: CommandSpec[] = COMMANDS,
): { command: CommandSpec; rest: string[] } | null {
  let best: CommandSpec | null = null;
  for (const c of commands) {
    if (c.path.every((w, i) => argv[i] === w) && (!best || c.path.length > best.path.length)) best = c;
  }
  return best ? { command: best, rest: argv.slice(best.path.length) } : null;
}

/** Help for an argv that names no command: the group's commands when argv[0] is a group, else all. */
function noCommand(argv: string[], io: CommandIO): number {
  const group = argv[0] ?? "";
  const members = COMMANDS.filter((c) => c.path.length > 1 && c.path[0] === group);
  if (members.length === 0) {
    io.err(`unknown command: ${argv.join(" ")}\n\n${helpText(COMMANDS)}`);
    return 2;
  }
  const asked = argv.length === 1 || argv[1] === "--help" || argv[1] === "-h";
  if (asked) {
    io.out(groupHelpText(group, members));
    return 0;
  }
  io.err(`unknown command: geode ${argv.slice(0, 2).join(" ")}\n\n${groupHelpText(group, members)}`);
  return 2;
}

/** Runs the CLI and returns its exit code. Only the chosen command's module is imported. */
export async function runCli(argv: string[], io: CommandIO): Promise<number> {
  if (argv.length === 0 || argv[0] === "help" || argv[0] === "--help" || argv[0] === "-h") {
    io.out(helpText(COMMANDS));
    return 0;
  }
  if (argv[0] === "--version" || argv[0] === "-V" || argv[0] === "version") {
    io.out(`geode ${cliVersion()}\n`);
    return 0;
  }
  const found = findCommand(argv);
  if (!found) return noCommand(argv, io);
  const { command, rest } = found;
  if (rest.includes("--help") || rest.includes("-h")) {
    io.out(`${command.summary}\n\nUsage: ${command.usage}\n`);
    return 0;
  }
  try {
    const module = await command.load();
    return await module.run(rest, io);
  } catch (err) {
    if (
      err instanceof UsageError ||
      (err instanceof TypeError && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"))
    ) {
      io.err(`${err.message}\nUsage: ${command.usage}\n`);
      return 2;
    }
    io.err(failureText(`geode ${command.path.join(" ")}`, err));
    return 1;
  }
}
