import { type GeodeConnection, type Logger, type Responder, serveRequests } from "@geode/bus";
import {
  type Correlation,
  CorrelationInputSchema,
  ErrorCode,
  GeodeError,
  parseOrThrow,
  type ToolDefinition,
  ToolDefinitionSchema,
  ToolTerminalLeg,
} from "@geode/contracts";
import { ToolStore } from "@geode/state";

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
 * policy, hooks, approval and receipts before a call reaches `handler`; a call of the wrong shape
 * is answered `invalid_request` without reaching it.
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
    {
      queue: `tool.${def.name}`,
      request: ToolTerminalLeg.request,
      ...(options.log ? { log: options.log } : {}),
    },
    async (call) => {
      if (call.tool_name !== def.name)
        throw new GeodeError(
          ErrorCode.InvalidRequest,
          `this terminal serves ${def.name}, not ${call.tool_name}`,
        );
      const correlation = parseOrThrow(
        CorrelationInputSchema,
        call.correlation,
        ErrorCode.InvalidRequest,
        "correlation",
      );
      const out = await handler(call.arguments, { tool_name: def.name, correlation });
      return ToolTerminalLeg.reply.encode({ result: out.result, has_error: out.has_error === true });
    },
  );
  // Serve first, then publish the definition: a caller that sees the tool can reach it.
  await nc.flush();
  const tools = await ToolStore.open(conn);
  await tools.publish(def);
  return {
    definition: def,
    async close() {
      await responder.drain();
      await tools.remove(def.name).catch(() => undefined);
    },
  };
}
