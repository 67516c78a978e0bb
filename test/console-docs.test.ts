import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { SHOTS_DIR, SHOTS_MANIFEST, webSourcesDigest } from "./console-shots.js";

const DOC = path.join(REPO_ROOT, "docs/console.md");

describe("the screenshots of docs/console.md", () => {
  const manifest = JSON.parse(readFileSync(path.join(SHOTS_DIR, SHOTS_MANIFEST), "utf8")) as {
    web_sources_sha256: string;
    shots: string[];
  };

  it("show the page as it is now (run `pnpm docs:console` after changing packages/console/web)", () => {
    expect(manifest.web_sources_sha256).toBe(webSourcesDigest());
  });

  it("are the ones the browser tests took, each shown in the doc, with no stale file left", () => {
    const referenced = [...readFileSync(DOC, "utf8").matchAll(/\]\(console\/([a-z0-9-]+)\.png\)/g)].map(
      (m) => m[1],
    );
    expect([...new Set(referenced)].sort()).toEqual(manifest.shots);
    const pngs = readdirSync(SHOTS_DIR)
      .filter((f) => f.endsWith(".png"))
      .map((f) => f.slice(0, -4))
      .sort();
    expect(pngs).toEqual(manifest.shots);
    for (const name of manifest.shots) expect(existsSync(path.join(SHOTS_DIR, `${name}.png`))).toBe(true);
  });
});
