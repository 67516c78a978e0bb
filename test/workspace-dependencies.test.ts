import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { REPO_ROOT } from "@geode/testing";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/** Every package and service: its folder and package.json. */
const workspaces = ["packages", "services"].flatMap((group) =>
  readdirSync(path.join(REPO_ROOT, group)).map((name) => path.join(group, name)),
);

function sourcesOf(dir: string): string[] {
  return readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|mts|js|mjs)$/.test(e.name))
    .map((e) => path.join(e.parentPath, e.name))
    .filter((f) => !/[/\\](node_modules|dist)[/\\]/.test(f));
}

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`); null for a relative one. */
function packageOf(specifier: string): string | null {
  if (specifier.startsWith(".") || specifier.startsWith("/")) return null;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

const BUILTIN = new Set(builtinModules);

/**
 * A workspace resolves an undeclared package through the root's node_modules, so nothing fails
 * until it is installed alone (or packed): each one declares what its files import, tests and
 * fixtures included (devDependencies), or as optional what it loads only when needed.
 */
describe("every package and service", () => {
  it.each(workspaces)("%s declares every package its files import", (dir) => {
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, dir, "package.json"), "utf8"));
    const declared = new Set<string>([
      pkg.name,
      ...Object.keys(pkg.dependencies ?? {}),
      ...Object.keys(pkg.devDependencies ?? {}),
      ...Object.keys(pkg.peerDependencies ?? {}),
      // Loaded only when needed (PGlite, for the embedded projection): declared as optional.
      ...Object.keys(pkg.optionalDependencies ?? {}),
    ]);
    const missing: string[] = [];
    for (const file of sourcesOf(dir)) {
      for (const { fileName } of ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles) {
        const name = packageOf(fileName);
        if (name === null || fileName.startsWith("node:") || BUILTIN.has(name) || declared.has(name))
          continue;
        missing.push(`${path.relative(REPO_ROOT, file)}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
