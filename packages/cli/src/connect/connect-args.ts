import { type ParseArgsConfig, parseArgs } from "node:util";
import { UsageError } from "../command.js";
import { hookEndpoint, type ShimAgent } from "../commands/hook-shim.js";

/** The options every `geode connect <agent>` takes (`parseArgs` form); each agent adds its own. */
const CONNECT_OPTIONS = {
  url: { type: "string" },
  write: { type: "string" },
  // Hooks fail closed unless asked otherwise; `--fail-closed` stays accepted (it was the opt-in).
  "fail-open": { type: "boolean", default: false },
  "fail-closed": { type: "boolean", default: false },
} as const;

/**
 * The agent's hook endpoint for `--url` (the gateway's default without it); a usage error for an
 * argument that is not an option, or a URL that is not one.
 */
function connectEndpoint(
  url: string | undefined,
  positionals: readonly string[],
  env: NodeJS.ProcessEnv,
  agent: ShimAgent | "opencode",
): string {
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
  try {
    return hookEndpoint(url, env, agent);
  } catch {
    throw new UsageError(`--url is not a URL: ${url}`);
  }
}

type OptionsConfig = NonNullable<ParseArgsConfig["options"]>;
type ConnectConfig<T extends OptionsConfig> = {
  args: string[];
  allowPositionals: true;
  options: typeof CONNECT_OPTIONS & T;
};
/** The parsed options of a `geode connect <agent>` command line. */
export type ConnectValues<T extends OptionsConfig> = ReturnType<typeof parseArgs<ConnectConfig<T>>>["values"];

/**
 * A `geode connect <agent>` command line: the common options and the agent's own, parsed, the
 * hook endpoint they name, and whether the guarded hooks fail closed (unless `--fail-open`).
 */
export function parseConnectArgs<const T extends OptionsConfig>(
  args: string[],
  env: NodeJS.ProcessEnv,
  agent: ShimAgent | "opencode",
  own: T,
): { values: ConnectValues<T>; endpoint: string; failClosed: boolean } {
  const config: ConnectConfig<T> = { args, allowPositionals: true, options: { ...CONNECT_OPTIONS, ...own } };
  const { values, positionals } = parseArgs(config);
  const {
    url,
    "fail-open": failOpen,
    "fail-closed": failClosed,
  } = values as {
    url?: string;
    "fail-open"?: boolean;
    "fail-closed"?: boolean;
  };
  if (failOpen && failClosed) throw new UsageError("--fail-open and --fail-closed contradict each other");
  return { values, endpoint: connectEndpoint(url, positionals, env, agent), failClosed: failOpen !== true };
}
