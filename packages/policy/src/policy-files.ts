import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";

/**
 * The repository's `policies/` folder (the schema and the packs): three levels above this file in
 * `packages/policy/{src,dist}/`, in a checkout and in the image alike; `GEODE_POLICIES_DIR` overrides.
 */
export function policiesDir(env: NodeJS.ProcessEnv = process.env): string {
  return env["GEODE_POLICIES_DIR"] ?? path.resolve(import.meta.dirname, "../../../policies");
}

/** The shipped schema's text (`policies/geode.cedarschema`). */
export function schemaText(dir: string = policiesDir()): string {
  return readFileSync(path.join(dir, "geode.cedarschema"), "utf8");
}

/** The names of the shipped packs (`policies/packs/<name>.cedar`), sorted. */
export function packNames(dir: string = policiesDir()): string[] {
  const packs = path.join(dir, "packs");
  if (!existsSync(packs)) return [];
  return readdirSync(packs)
    .filter((f) => f.endsWith(".cedar"))
    .map((f) => f.slice(0, -".cedar".length))
    .sort();
}

/** A shipped pack's policy text, or null when there is no pack of that name. */
export function packText(name: string, dir: string = policiesDir()): string | null {
  if (!packNames(dir).includes(name)) return null;
  return readFileSync(path.join(dir, "packs", `${name}.cedar`), "utf8");
}

/** The first line of a pack's leading `//` comment: what the pack is for. */
export function packSummary(text: string): string {
  const first = text.split("\n").find((l) => l.startsWith("//"));
  return first ? first.replace(/^\/\/\s*/, "") : "";
}
