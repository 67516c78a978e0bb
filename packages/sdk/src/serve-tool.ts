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
import { configuredResultInlineBytes } from "@geode/service";
import { ResultStore, ToolStore } from "@geode/state";

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

export interface ServeToolOptions {
  log?: Logger;
  /**
   * A result whose compact JSON is larger is stored in `{ns}_results` and replied by reference;
   * default `GEODE_RESULT_INLINE_BYTES` (256 KiB).
   */
  resultInlineBytes?: number;
}

export interface ServedTool {
  readonly definition: ToolDefinition;
  /** Stops serving, answers calls in flight, and removes the definition from `{ns}_tools`. */
  close(): Promise<void>;
}

/**
 * Registers a remote tool (KV `{ns}_tools`, key = tool name) and serves its approved calls on
 * `{ns}.tool.terminal.{tool}`; replicas share the queue group `tool.{name}`. The tool-executor runs
 * policy, hooks, approval and receipts before a call reaches `handler`; a call of the wrong shape
 * is answered `invalid_request` without reaching it. A result larger than `resultInlineBytes` is
 * written to the Object Store bucket `{ns}_results` under this tool's own chunk subjects and
 * replied as `{"$ref", "bytes", "sha256"}`; the executor checks and reads it back, so callers see
 * the whole result (docs/protocol.md#large-results).
 */
export async function serveTool(
  conn: GeodeConnection,
  definition: ToolDefinition,
  handler: ToolHandler,
  options: ServeToolOptions = {},
): Promise<ServedTool> {
  const def = parseOrThrow(ToolDefinitionSchema, definition, ErrorCode.InvalidRequest, "definition");
  const { nc, names: n } = conn;
  const inlineBytes = options.resultInlineBytes ?? configuredResultInlineBytes();
  const results = new ResultStore(conn);
  const responder: Responder = serveRequests(
    conn,
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
      const { result } = await results
        .offload(out.result, { inlineBytes, writer: { tool: def.name }, toolName: def.name })
        .catch((cause: unknown) => {
          throw new GeodeError(
            ErrorCode.Unavailable,
            `the result could not be stored in ${n.resultStore}: ${(cause as Error).message}`,
            { cause },
          );
        });
      return ToolTerminalLeg.reply.encode({ result, has_error: out.has_error === true });
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
