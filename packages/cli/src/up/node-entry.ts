import { existsSync } from "node:fs";

const THIS_FROM_SOURCE = import.meta.url.endsWith(".ts");

/**
 * True when the processes this CLI starts run from their TypeScript sources: when the CLI itself
 * does (`pnpm geode`, tsx), so a contributor's edit takes effect without a build, unless
 * `GEODE_FROM_SOURCE=0` (the test suite, which builds first); false for the compiled `geode` bin,
 * whose services and examples run from `dist/`.
 */
function fromSource(): boolean {
  return THIS_FROM_SOURCE && process.env["GEODE_FROM_SOURCE"] !== "0";
}

/** Node's arguments that run a service (`services/<name>`, absolute) as this CLI runs. */
export function serviceNodeArgs(serviceDir: string): string[] {
  if (fromSource()) return sourceNodeArgs(`${serviceDir}/src/main.ts`);
  const compiled = `${serviceDir}/dist/main.js`;
  if (!existsSync(compiled))
    throw new Error(`${compiled} is missing: run \`pnpm build\` first (or \`pnpm geode …\`)`);
  return [compiled];
}

/**
 * The compiled form of one of the demo's example modules (`examples/demo/<name>.ts`, absolute path
 * given) when this CLI is compiled, else the TypeScript file itself.
 */
export function demoExampleModule(file: string): string {
  return fromSource() ? file : file.replace(/\/examples\/demo\/([^/]+)\.ts$/, "/examples/demo/dist/$1.js");
}

/**
 * Node's arguments that run one of the demo's example processes: compiled JavaScript when this CLI
 * is compiled (no TypeScript tooling at run time), else its source through tsx's loader.
 */
export function demoExampleNodeArgs(file: string): string[] {
  return fromSource() ? sourceNodeArgs(file) : [demoExampleModule(file)];
}

/** A TypeScript file through tsx's loader, importing the workspace packages' sources. */
function sourceNodeArgs(file: string): string[] {
  return ["--import", import.meta.resolve("tsx"), "--conditions=geode-source", file];
}
