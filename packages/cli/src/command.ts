/** One `geode` sub-command. `run` returns the process exit code. */
export interface Command {
  /** The words that select it, e.g. `["handlers", "ls"]`. */
  path: string[];
  /** One line for `geode help`. */
  summary: string;
  /** Usage line, e.g. `geode schema <HookName> [--version v1|v2] | --all`. */
  usage: string;
  run(args: string[], io: CommandIO): Promise<number>;
}

export interface CommandIO {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** True when stdout is a terminal (progress bars, colours). */
  isTTY: boolean;
}

/** A usage error: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
