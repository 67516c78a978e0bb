import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  ARCHITECTURE_DOC,
  dependencyRules,
  layers,
  renderLayers,
  withFreshLayers,
  workspaceFolders,
} from "../scripts/architecture-docs.js";

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
      "packages/telemetry",
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
