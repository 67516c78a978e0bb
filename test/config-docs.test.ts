import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ENV_SPECS, OPERATIONS_DOC, withFreshTable } from "../scripts/config-docs.js";

describe("the configuration table of docs/operations.md", () => {
  it("is generated from the environment specs (run `pnpm docs:config` after changing one)", () => {
    const committed = readFileSync(OPERATIONS_DOC, "utf8");
    expect(committed).toBe(withFreshTable(committed));
  });

  it("covers every variable of the wire contract's configuration section with its default", () => {
    const vars = new Map(ENV_SPECS.flatMap((s) => s.vars).map((v) => [v.name, v.default]));
    const contract: Array<[string, string]> = [
      ["NATS_URL", "`nats://127.0.0.1:4222`"],
      ["NATS_USER", "unset"],
      ["NATS_PASS", "unset"],
      ["NATS_TOKEN", "unset"],
      ["DATABASE_URL", "unset: embedded PGlite under `.geode/pgdata`, through its owner process"],
      ["GEODE_NAMESPACE", "`geode`"],
      ["GEODE_RUNS_DIR", "`.geode/runs` (`/data/runs` in the image)"],
      ["GEODE_TOOL_DENY", "empty"],
      ["GEODE_TOOL_ALLOW", "empty (all)"],
      ["GEODE_TOOL_TIMEOUT_MS", "`300000`"],
      ["GEODE_APPROVAL_TIMEOUT_MS", "`60000`"],
      ["LOG_LEVEL", "`info`"],
    ];
    for (const [name, def] of contract) expect({ name, def: vars.get(name) }).toEqual({ name, def });
    // and each variable is read by one spec only
    expect(ENV_SPECS.flatMap((s) => s.vars).length).toBe(vars.size);
  });

  it("each spec reads its defaults from an empty environment and names every bad variable", () => {
    for (const spec of ENV_SPECS) expect(() => spec.parse({})).not.toThrow();
    const reading = (name: string) => ENV_SPECS.find((s) => s.vars.some((v) => v.name === name));
    const [common, tools] = [reading("GEODE_NAMESPACE"), reading("GEODE_TOOL_DENY")];
    expect(() => common!.parse({ GEODE_NAMESPACE: "Bad-NS", LOG_LEVEL: "loud" })).toThrow(
      /GEODE_NAMESPACE must match .*; LOG_LEVEL: LOG_LEVEL must be one of fatal/,
    );
    expect(tools!.parse({ GEODE_TOOL_DENY: " shell.*, ,fs.write " })).toMatchObject({
      deny: ["shell.*", "fs.write"],
      toolTimeoutMs: 300_000,
    });
    expect(() => tools!.parse({ GEODE_RECEIPT_LEASE_MS: "0" })).toThrow(
      /GEODE_RECEIPT_LEASE_MS must be a positive integer, got "0"/,
    );
  });
});
