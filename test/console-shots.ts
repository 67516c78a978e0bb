import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "@geode/testing";

/** Where `pnpm docs:console` writes the screenshots of docs/console.md, and its manifest there. */
export const SHOTS_DIR = path.join(REPO_ROOT, "docs/console");
export const SHOTS_MANIFEST = "shots.json";

const WEB = path.join(REPO_ROOT, "packages/console/web");

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((d) => (d.isDirectory() ? files(path.join(dir, d.name)) : [path.join(dir, d.name)]))
    .sort();
}

/**
 * SHA-256 of the page's sources (`web/index.html` and `web/src/**`, names and contents): the
 * screenshots' manifest records it, so a page changed since they were taken is noticed.
 */
export function webSourcesDigest(): string {
  const h = createHash("sha256");
  for (const file of [path.join(WEB, "index.html"), ...files(path.join(WEB, "src"))]) {
    h.update(path.relative(WEB, file));
    h.update("\0");
    h.update(readFileSync(file));
    h.update("\0");
  }
  return h.digest("hex");
}
