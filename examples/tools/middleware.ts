/**
 * A trusted tool middleware module. Load it into the tool-executor with
 * `GEODE_TOOL_MIDDLEWARE=./examples/tools/middleware.ts`; it must export `register(registry)`.
 */
import type { MiddlewareRegistry } from "@geode/middleware";

/** Last terminal durations in ms, by tool name (for a metrics exporter to read). */
export const lastDurationMs = new Map<string, number>();

export function register(registry: MiddlewareRegistry): void {
  // A transform returns a new request; it never edits the (frozen) one it gets.
  registry.registerToolRequest({ name: "trim-strings", priority: 10 }, (req) => ({
    ...req,
    arguments: Object.fromEntries(
      Object.entries(req.arguments).map(([k, v]) => [k, typeof v === "string" ? v.trim() : v]),
    ),
  }));

  // A wrapper calls next() once and returns its result; a failure after next() cannot lose it.
  registry.registerToolExecution({ name: "timing", priority: 10 }, async (req, next) => {
    const t0 = performance.now();
    try {
      return await next();
    } finally {
      lastDurationMs.set(req.tool_name, performance.now() - t0);
    }
  });
}
