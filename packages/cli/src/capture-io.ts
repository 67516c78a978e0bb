import { runCli } from "./cli.js";
import type { CommandIO } from "./command.js";

/** A CommandIO that keeps what a command writes (tests, and programs embedding the CLI). */
export interface CapturedIO extends CommandIO {
  stdout(): string;
  stderr(): string;
  /** Both streams, in the order written. */
  text(): string;
}

export function captureIO(env: NodeJS.ProcessEnv = process.env): CapturedIO {
  let out = "";
  let err = "";
  let all = "";
  return {
    out: (t) => {
      out += t;
      all += t;
    },
    err: (t) => {
      err += t;
      all += t;
    },
    env,
    isTTY: false,
    stdout: () => out,
    stderr: () => err,
    text: () => all,
  };
}

/** Runs `geode <argv>` in-process and returns its exit code and output. */
export async function runCliCaptured(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; out: string; err: string }> {
  const io = captureIO(env);
  const code = await runCli(argv, io);
  return { code, out: io.stdout(), err: io.stderr() };
}
