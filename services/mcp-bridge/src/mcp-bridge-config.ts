import { envSpec, envVar, read } from "@geode/env";

/** The defaults of the mcp-bridge's limits (docs/operations.md, "Configuration"). */
export const MCP_BRIDGE_DEFAULTS = {
  connectTimeoutMs: 30_000,
  callTimeoutMs: 300_000,
  maxTools: 256,
  schemaMaxBytes: 64 * 1024,
  resultMaxBytes: 16 * 1024 * 1024,
  restartMinMs: 1_000,
  restartMaxMs: 60_000,
  pingIntervalMs: 30_000,
} as const;
const D = MCP_BRIDGE_DEFAULTS;

/** The mcp-bridge's own environment, beside the common one. */
export const MCP_BRIDGE_ENV = envSpec({
  connectTimeoutMs: envVar("GEODE_MCP_CONNECT_TIMEOUT_MS", read.int(D.connectTimeoutMs, 1), {
    default: `\`${D.connectTimeoutMs}\``,
    meaning:
      "how long connecting to an upstream MCP server and listing its tools may take before the attempt counts as failed (mcp-bridge)",
  }),
  callTimeoutMs: envVar("GEODE_MCP_CALL_TIMEOUT_MS", read.int(D.callTimeoutMs, 1), {
    default: `\`${D.callTimeoutMs}\``,
    meaning:
      "time limit of one upstream `tools/call` or forwarded resources/prompts request; past it a call's outcome is unknown (`indeterminate` for an effectful tool, an error result for a read tool), never retried (mcp-bridge)",
  }),
  maxTools: envVar("GEODE_MCP_MAX_TOOLS", read.int(D.maxTools, 1), {
    default: `\`${D.maxTools}\``,
    meaning:
      "the most tools registered for one upstream server; the rest are left out and logged (mcp-bridge)",
  }),
  schemaMaxBytes: envVar("GEODE_MCP_SCHEMA_MAX_BYTES", read.int(D.schemaMaxBytes, 1), {
    default: `\`${D.schemaMaxBytes}\` (64 KiB)`,
    meaning:
      "the largest input schema of an upstream tool; a tool with a larger one is left out and logged (mcp-bridge)",
  }),
  resultMaxBytes: envVar("GEODE_MCP_RESULT_MAX_BYTES", read.int(D.resultMaxBytes, 1), {
    default: `\`${D.resultMaxBytes}\` (16 MiB)`,
    meaning:
      "the largest upstream result or message; a larger tool result is an error result, and a stdio message over it (plus 64 KiB) ends the connection, which restarts the server (results over `GEODE_RESULT_INLINE_BYTES` travel through `{ns}_results`) (mcp-bridge)",
  }),
  restartMinMs: envVar("GEODE_MCP_RESTART_MIN_MS", read.int(D.restartMinMs, 1), {
    default: `\`${D.restartMinMs}\``,
    meaning:
      "first wait before reconnecting a failed upstream (restarting a stdio server); doubled on each failure (mcp-bridge)",
  }),
  restartMaxMs: envVar("GEODE_MCP_RESTART_MAX_MS", read.int(D.restartMaxMs, 1), {
    default: `\`${D.restartMaxMs}\``,
    meaning: "the longest wait between reconnection attempts of a failed upstream (mcp-bridge)",
  }),
  pingIntervalMs: envVar("GEODE_MCP_PING_INTERVAL_MS", read.int(D.pingIntervalMs, 1), {
    default: `\`${D.pingIntervalMs}\``,
    meaning:
      "how often a connected upstream is pinged; one that does not answer within `GEODE_MCP_CONNECT_TIMEOUT_MS` (an HTTP server gone, a stdio server hung) counts as failed: its tools are removed and it is reconnected with backoff (mcp-bridge)",
  }),
});

/** The limits an mcp-bridge runs with. */
export type McpBridgeLimits = { -readonly [K in keyof typeof MCP_BRIDGE_DEFAULTS]: number };
