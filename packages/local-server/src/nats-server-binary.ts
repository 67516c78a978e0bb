import { accessSync, constants } from "node:fs";
import path from "node:path";

/** Where Debian's `nats-server` package puts the binary (often not on a user's PATH). */
const WELL_KNOWN = ["/usr/sbin/nats-server", "/usr/local/bin/nats-server", "/usr/bin/nats-server"];

/** The `nats-server` binary: on PATH, else a well-known place; undefined when there is none. */
export function findNatsServerBinary(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dirs = (env["PATH"] ?? "").split(path.delimiter).filter((d) => d !== "");
  for (const candidate of [...dirs.map((d) => path.join(d, "nats-server")), ...WELL_KNOWN]) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
