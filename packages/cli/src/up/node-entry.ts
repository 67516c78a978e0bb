import { existsSync } from "node:fs";

/**
 * True when this CLI runs from its TypeScript sources (`pnpm geode`, tsx), false when compiled (the
 * `geode` bin). The processes it starts follow suit: services from `dist/` when compiled, else from
 * `src/` through tsx's loader, so a contributor's edit takes effect without a build.
 */
const FROM_SOURCE = import.meta.url.endsWith(".ts");

/** Node's arguments that run a service (`services/<name>`, absolute) as this CLI runs. */
export function serviceNodeArgs(serviceDir: string): string[] {
  if (FROM_SOURCE) return typeScriptNodeArgs(`${serviceDir}/src/main.ts`);
  const compiled = `${serviceDir}/dist/main.js`;
  if (!existsSync(compiled))
    throw new Error(`${compiled} is missing: run \`pnpm build\` first (or \`pnpm geode …\`)`);
  return [compiled];
}

/**
 * Node's arguments that run a TypeScript file (the demo's examples) through tsx's loader; the
 * workspace packages it imports come from their sources when this CLI does, else compiled.
 */
export function typeScriptNodeArgs(file: string): string[] {
  const loader = ["--import", import.meta.resolve("tsx")];
  return FROM_SOURCE ? [...loader, "--conditions=geode-source", file] : [...loader, file];
}
