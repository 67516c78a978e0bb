import { z } from "zod";

const int = z.number().int();
const count = int.min(0);

/** One registered tool of an MCP server with its calls and blocks over the window. */
const ConsoleMcpToolSchema = z.strictObject({
  /** The registered name, `{server}_{tool}`. */
  name: z.string(),
  /** The upstream's own name of the tool. */
  tool: z.string(),
  effect: z.string(),
  requires_approval: z.boolean(),
  read_only: z.boolean(),
  destructive: z.boolean(),
  open_world: z.boolean(),
  /** Calls attempted over the window (run or refused). */
  calls: count,
  /** Calls blocked or denied over the window. */
  blocks: count,
});

/** `GET /api/mcp/servers`: one upstream record, the bridge's live state of it, its tools. */
const ConsoleMcpServerSchema = z.strictObject({
  name: z.string(),
  transport: z.enum(["stdio", "http"]),
  /** A stdio server's command line, an HTTP server's URL (never env or header values). */
  target: z.string(),
  groups: z.array(z.string()).nullable(),
  /** The record's allow globs over the upstream's tools; null: all. */
  allow: z.array(z.string()).nullable(),
  /** The bridge's state; `unknown` when no mcp-bridge answered, `not seen` when it does not know the server. */
  state: z.enum(["connecting", "connected", "failed", "unknown", "not seen"]),
  /** Tools the bridge registered for it now; null when unknown. */
  tools_count: count.nullable(),
  last_error: z.string().nullable(),
  tools: z.array(ConsoleMcpToolSchema),
});
export type ConsoleMcpServer = z.infer<typeof ConsoleMcpServerSchema>;

export const ConsoleMcpServersSchema = z.strictObject({
  /** The window calls and blocks are counted over. */
  window_ms: count,
  /** Whether an mcp-bridge answered its health request. */
  bridge: z.boolean(),
  items: z.array(ConsoleMcpServerSchema),
});
export type ConsoleMcpServers = z.infer<typeof ConsoleMcpServersSchema>;
