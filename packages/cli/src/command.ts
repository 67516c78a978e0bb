/** What a `geode` sub-command's module exports: `run` returns the process exit code. */
export interface CommandModule {
  run(args: string[], io: CommandIO): Promise<number>;
}

/** One `geode` sub-command as help lists it; its module is imported only when it is chosen. */
export interface CommandSpec {
  /** The words that select it, e.g. `["handlers", "ls"]`. */
  path: string[];
  /** One line for `geode help`. */
  summary: string;
  /** Usage line, e.g. `geode schema <HookName> [--version v1|v2] | --all`. */
  usage: string;
  load(): Promise<CommandModule>;
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

/**
 * Reads an optional whole-number option (`--limit 10`): undefined when absent, else an integer in
 * `[min, max]`, else a UsageError naming the flag.
 */
export function intOption(
  value: string | undefined,
  flag: string,
  min = 1,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    const range =
      max === Number.MAX_SAFE_INTEGER
        ? min === 1
          ? "a positive integer"
          : `an integer ≥ ${min}`
        : `an integer between ${min} and ${max}`;
    throw new UsageError(`--${flag} must be ${range}, got ${value}`);
  }
  return n;
}

/**
 * What failed, for people: the error's message (the errors of the bus and the projection name the
 * URL without its password), then its `hint` (what to do) on a second line when it has one; never
 * a stack.
 */
export function describeFailure(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const hint = (err as { hint?: unknown } | null)?.hint;
  return typeof hint === "string" ? `${message}\n  ${hint}` : message;
}

/** `<prefix>: <describeFailure(err)>` and a newline. */
export function failureText(prefix: string, err: unknown): string {
  return `${prefix}: ${describeFailure(err)}\n`;
}
