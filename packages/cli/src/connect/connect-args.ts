import { UsageError } from "../command.js";
import { hookEndpoint, type ShimAgent } from "../commands/hook-shim.js";

/** The options every `geode connect <agent>` takes (`parseArgs` form); each agent adds its own. */
export const CONNECT_OPTIONS = {
  url: { type: "string" },
  write: { type: "string" },
  "fail-closed": { type: "boolean", default: false },
} as const;

/**
 * The agent's hook endpoint for `--url` (the gateway's default without it); a usage error for an
 * argument that is not an option, or a URL that is not one.
 */
export function connectEndpoint(
  url: string | undefined,
  positionals: readonly string[],
  env: NodeJS.ProcessEnv,
  agent: ShimAgent,
): string {
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
  try {
    return hookEndpoint(url, env, agent);
  } catch {
    throw new UsageError(`--url is not a URL: ${url}`);
  }
}
