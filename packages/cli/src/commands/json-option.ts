import { readFile } from "node:fs/promises";
import { UsageError } from "../command.js";

/**
 * A JSON object given inline (`--payload '{"a":1}'`) or as `@file` (`--payload @call.json`, `@-` for
 * stdin); anything else is a UsageError naming the flag.
 */
export async function readJsonOption(value: string, flag: string): Promise<Record<string, unknown>> {
  let text = value;
  if (value.startsWith("@")) {
    const file = value.slice(1);
    try {
      text = file === "-" ? await readStdin() : await readFile(file, "utf8");
    } catch (err) {
      throw new UsageError(`--${flag} ${value}: ${(err as Error).message}`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--${flag} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new UsageError(`--${flag} must be a JSON object`);
  return parsed as Record<string, unknown>;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
