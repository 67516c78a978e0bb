import type { IncomingMessage } from "node:http";

/**
 * The first of `names` (lower case) that a request sends more than once, else undefined. Node keeps
 * only the first of a repeated `Authorization` and joins other repeats, so a request that says two
 * things in one header would be read as one of them; a caller refuses it instead.
 */
export function repeatedHeader(req: IncomingMessage, names: readonly string[]): string | undefined {
  return names.find((name) => (req.headersDistinct[name]?.length ?? 0) > 1);
}
