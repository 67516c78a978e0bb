import { readFileSync } from "node:fs";
import { names } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import {
  ARCHITECTURE_DOC,
  dependencyRules,
  layers,
  renderLayers,
  withFreshLayers,
  workspaceFolders,
} from "../scripts/architecture-docs.js";
import { renderComponents, renderNames, subjectMatches } from "../scripts/architecture-tables.js";

describe("the layer table of docs/architecture.md", () => {
  it("is rendered from .dependency-cruiser.json (run `pnpm docs:architecture` after changing a rule)", () => {
    const committed = readFileSync(ARCHITECTURE_DOC, "utf8");
    expect(committed).toBe(withFreshLayers(committed));
  });

  it("has every package and service in one row, each after every layer it may import", () => {
    const rows = layers();
    expect(rows.flatMap((l) => l.folders).sort()).toEqual(workspaceFolders());
    const rowOf = (folder: string) => rows.findIndex((l) => l.folders.includes(folder));
    rows.forEach((layer, i) => {
      for (const imported of layer.imports ?? [])
        expect({ folders: layer.folders, imported, below: rowOf(imported) < i }).toMatchObject({
          below: true,
        });
    });
    const lifecycle = rows.find((l) => l.folders.includes("packages/lifecycle"));
    expect(lifecycle?.imports).toEqual([
      "packages/bus",
      "packages/contracts",
      "packages/state",
      "packages/testing",
    ]);
    // Telemetry sits on the bus and the service runtime, below everything that reports through it.
    const telemetry = rows.find((l) => l.folders.includes("packages/telemetry"));
    expect(telemetry?.imports).toEqual([
      "packages/bus",
      "packages/contracts",
      "packages/env",
      "packages/service",
      "packages/testing",
    ]);
    // The service runtime sits on the bus and never reaches telemetry.
    const service = rows.find((l) => l.folders.includes("packages/service"));
    expect(service?.imports).toEqual([
      "packages/bus",
      "packages/contracts",
      "packages/env",
      "packages/testing",
    ]);
  });

  it("follows a change of the rules: a folder the rule allows more shows it", () => {
    const rules = dependencyRules().map((r) =>
      r.name === "lifecycle-on-core"
        ? { ...r, to: { ...r.to, pathNot: "^packages/(contracts|bus|state|testing|lifecycle|middleware)/" } }
        : r,
    );
    const row = renderLayers(rules)
      .split("\n")
      .find((l) => l.startsWith("| `packages/lifecycle` |"));
    expect(row).toContain("| bus, contracts, middleware, state, testing |");
    expect(renderLayers()).not.toContain("| bus, contracts, middleware, state, testing |");
  });
});

describe("the components and names tables of docs/architecture.md", () => {
  it("list every package and service, with the CLI's commands", () => {
    const table = renderComponents(workspaceFolders());
    for (const folder of workspaceFolders()) expect(table).toContain(`| \`${folder}\` |`);
    expect(table).toContain("`geode console`");
    expect(table).not.toMatch(/\| \|$/m); // every folder has a job (its package.json description)
  });

  it("list every bucket, and who sends and serves each name as the NATS roles grant it", () => {
    const table = renderNames();
    for (const bucket of Object.values(names("geode").buckets))
      expect(table).toContain(`KV ${bucket.replace(/^geode_/, "{ns}_")}\``);
    const invoke = table.split("\n").find((l) => l.startsWith("| invoke a hook |"));
    expect(invoke).toContain("| hook-dispatcher | runtime, tool-executor, verifier, agent-gateway |");
    expect(subjectMatches("geode.hook.handler.*.policy", "geode.hook.handler.PreToolUse.policy")).toBe(true);
    expect(subjectMatches("geode.hook.>", "geode.hook")).toBe(false);
    expect(subjectMatches("geode.tool.execute", "geode.tool.execute.x")).toBe(false);
  });
});
