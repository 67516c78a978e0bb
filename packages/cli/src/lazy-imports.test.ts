import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const DIST = fileURLToPath(new URL("../dist/commands/", import.meta.url));

/**
 * The CommonJS packages a fresh Node process has loaded after importing one compiled command
 * module (what `geode <command>` imports before it runs). ES-module packages (zod, Kysely) are not
 * in the list; the heavy CommonJS ones (prom-client, pg) are.
 */
function packagesLoadedBy(command: string): string[] {
  const script = `
    import { createRequire } from "node:module";
    await import(${JSON.stringify(`${DIST}${command}.js`)});
    const names = Object.keys(createRequire(import.meta.url).cache)
      .map((k) => k.match(/node_modules\\/(?!\\.pnpm\\/)((?:@[^/]+\\/)?[^/]+)\\//)?.[1])
      .filter(Boolean);
    process.stdout.write(JSON.stringify([...new Set(names)]));`;
  return JSON.parse(
    execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" }),
  );
}

describe("what a command loads", () => {
  it("geode health loads the NATS client but neither prom-client nor the Postgres client", () => {
    const loaded = packagesLoadedBy("health");
    expect(loaded).toContain("@nats-io/transport-node");
    expect(loaded).not.toContain("prom-client");
    expect(loaded).not.toContain("pg");
  });

  it("geode replay loads the Postgres client (the check above can see it)", () => {
    expect(packagesLoadedBy("replay")).toContain("pg");
  });
});
