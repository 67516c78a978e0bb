/**
 * Trusted tool middleware for the demo, loaded by the tool-executor from
 * `GEODE_TOOL_MIDDLEWARE=examples/demo/tool-middleware.ts`.
 */
import type { MiddlewareRegistry } from "@geode/middleware";

export function register(registry: MiddlewareRegistry): void {
  // Request stage: a transform returns a new request (the input is frozen).
  registry.registerToolRequest({ name: "normalize-paths", priority: 10 }, (request) => {
    const p = request.arguments["path"];
    if (typeof p !== "string") return request;
    return {
      tool_name: request.tool_name,
      arguments: { ...request.arguments, path: p.trim().replace(/^\.\//, "") },
    };
  });
  // Execution stage: wraps the approved terminal call without changing it.
  registry.registerToolExecution({ name: "timing", priority: 10 }, async (_request, next) => {
    const t0 = performance.now();
    const result = await next();
    return { ...result, result: { ...result.result, elapsed_ms: Math.round(performance.now() - t0) } };
  });
}
