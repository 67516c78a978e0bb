import path from "node:path";
import { pathToFileURL } from "node:url";
import type { MiddlewareRegistry } from "@geode/middleware";

/**
 * Loads trusted middleware modules (paths relative to the working directory, or package names);
 * each must export `register(registry)`. A module that fails to load stops the start-up.
 */
export async function loadMiddlewareModules(
  modules: readonly string[],
  registry: MiddlewareRegistry,
): Promise<void> {
  for (const spec of modules) {
    const url = spec.startsWith(".") || path.isAbsolute(spec) ? pathToFileURL(path.resolve(spec)).href : spec;
    const mod = (await import(url)) as { register?: unknown; default?: { register?: unknown } };
    const register = mod.register ?? mod.default?.register;
    if (typeof register !== "function")
      throw new Error(`middleware module ${spec} does not export register(registry)`);
    await (register as (r: MiddlewareRegistry) => unknown)(registry);
  }
}
