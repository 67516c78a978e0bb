import { encodeJson, ensureBucket, type Logger, type Responder, serveRequests } from "@geode/bus";
import {
  type Correlation,
  CorrelationInputSchema,
  ErrorCode,
  GeodeError,
  parseOrThrow,
  type ToolDefinition,
  ToolDefinitionSchema,
  ToolTerminalRequestSchema,
} from "@geode/contracts";
import type { GeodeConnection } from "./connection.js";

/** What a tool returns: its result object and whether it is an error result. */
export interface ToolOutput {
  result: Record<string, unknown>;
  has_error?: boolean;
}

/** Runs an approved call. A throw becomes an error reply, which the executor reports as an error result. */
export type ToolHandler = (
  args: Record<string, unknown>,
  call: { tool_name: string; correlation: Correlation },
) => ToolOutput | Promise<ToolOutput>;

export interface ServedTool {
  readonly definition: ToolDefinition;
  /** Stops serving, answers calls in flight, and removes the definition from `{ns}_tools`. */
  close(): Promise<void>;
}

/**
 * Registers a remote tool (KV `{ns}_tools`, key = tool name) and serves its approved calls on
 * `{ns}.tool.terminal.{tool}`; replicas share the queue group `tool.{name}`. The tool-executor runs
 * policy, hooks, approval and receipts before a call reaches `handler`.
 */
export async function serveTool(
  conn: GeodeConnection,
  definition: ToolDefinition,
  handler: ToolHandler,
  options: { log?: Logger } = {},
): Promise<ServedTool> {
  const def = parseOrThrow(ToolDefinitionSchema, definition, ErrorCode.InvalidRequest, "definition");
  const { nc, names: n } = conn;
  const responder: Responder = serveRequests(
    nc,
    n.toolTerminal(def.name),
    { queue: `tool.${def.name}`, ...(options.log ? { log: options.log } : {}) },
    async (body) => {
      const call = parseOrThrow(ToolTerminalRequestSchema, body, ErrorCode.InvalidRequest);
      if (call.tool_name !== def.name)
        throw new GeodeError(
          ErrorCode.InvalidRequest,
          `this terminal serves ${def.name}, not ${call.tool_name}`,
        );
      const correlation = CorrelationInputSchema.parse(call.correlation);
      const out = await handler(call.arguments, { tool_name: def.name, correlation });
      return { result: out.result, has_error: out.has_error === true };
    },
  );
  // Serve first, then publish the definition: a caller that sees the tool can reach it.
  await nc.flush();
  const kv = await ensureBucket(nc, n, "tools");
  await kv.put(def.name, encodeJson(def));
  return {
    definition: def,
    async close() {
      await responder.drain();
      await kv.delete(def.name).catch(() => undefined);
    },
  };
}
