#!/usr/bin/env node
export {}; // a module: top-level await below

const argv = process.argv.slice(2);
const out = (t: string) => process.stdout.write(t);
const err = (t: string) => process.stderr.write(t);

if (argv[0] === "hook-shim") {
  // Runs once per hook call of an agent: load the shim alone, not every command.
  const { runHookShim } = await import("./commands/hook-shim.js");
  process.exitCode = await runHookShim(argv.slice(1), { stdin: process.stdin, out, err, env: process.env });
} else {
  const { runCli } = await import("./cli.js");
  process.exitCode = await runCli(argv, { out, err, env: process.env, isTTY: Boolean(process.stdout.isTTY) });
}
