import { UsageError } from "../command.js";
import { hookEndpoint, type ShimAgent } from "../commands/hook-shim.js";

/**
 * What every `geode connect <agent>` checks of its command line: no positional argument, and
 * `--url` (else the environment's gateway) as the agent's hook endpoint; a usage error otherwise.
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
