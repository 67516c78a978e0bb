import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Replaces a file through a temporary file beside it, so an agent never reads half of it. */
export function writeAtomically(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.geode-${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

/**
 * Writes an agent's JSON settings with the gateway's hooks merged in: `merge` builds the new
 * content; when it throws (settings of a shape the merge cannot keep), the reason goes to stderr
 * and nothing is written. True when written.
 */
export function writeMergedJson(file: string, io: { err(s: string): void }, merge: () => unknown): boolean {
  let merged: unknown;
  try {
    merged = merge();
  } catch (err) {
    io.err(`${file}: ${err instanceof Error ? err.message : err}; nothing written\n`);
    return false;
  }
  writeAtomically(file, `${JSON.stringify(merged, null, 2)}\n`);
  return true;
}
