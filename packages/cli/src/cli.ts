import { type Command, type CommandIO, failureText, UsageError } from "./command.js";
import { COMMANDS } from "./commands/index.js";

function helpText(commands: Command[]): string {
  const width = Math.max(...commands.map((c) => c.path.join(" ").length));
  const lines = commands.map((c) => `  ${c.path.join(" ").padEnd(width)}  ${c.summary}`);
  return `geode — operate the GEODE extension plane\n\nUsage: geode <command> [options]\n\nCommands:\n${lines.join("\n")}\n\nRun 'geode <command> --help' for a command's usage.\n`;
}

/** Finds the command whose path is the longest prefix of `argv`. */
export function findCommand(
  argv: string[],
  commands: Command[] = COMMANDS,
): { command: Command; rest: string[] } | null {
  let best: Command | null = null;
  for (const c of commands) {
    if (c.path.every((w, i) => argv[i] === w) && (!best || c.path.length > best.path.length)) best = c;
  }
  return best ? { command: best, rest: argv.slice(best.path.length) } : null;
}

/** Runs the CLI and returns its exit code. */
export async function runCli(argv: string[], io: CommandIO): Promise<number> {
  if (argv.length === 0 || argv[0] === "help" || argv[0] === "--help" || argv[0] === "-h") {
    io.out(helpText(COMMANDS));
    return 0;
  }
  const found = findCommand(argv);
  if (!found) {
    io.err(`unknown command: ${argv.join(" ")}\n\n${helpText(COMMANDS)}`);
    return 2;
  }
  const { command, rest } = found;
  if (rest.includes("--help") || rest.includes("-h")) {
    io.out(`${command.summary}\n\nUsage: ${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest, io);
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
