import { requestJson } from "@geode/bus";
import {
  type CorrelationInput,
  ErrorCode,
  GeodeError,
  type ToolExecuteReply,
  ToolExecuteReplySchema,
} from "@geode/contracts";
import type { GeodeConnection } from "./connection.js";

export interface ToolCall {
  tool_name: string;
  arguments: Record<string, unknown>;
  correlation?: CorrelationInput;
  /** The logical operation of an effectful call; default `{session_id}.{tool_call_id}`. */
  operation_key?: string;
  /** The caller's budget for hooks, in ms. */
  timeout_ms?: number;
}

export interface ToolClient {
  /**
   * Runs one call through the tool-executor's full boundary and returns its reply
   * (`completed|blocked|denied|replayed|indeterminate|failed`). Error replies (`unknown_tool`,
   * `schema_invalid`, `invalid_request`, `unavailable`, …) reject as GeodeError.
   */
  execute(call: ToolCall, options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ToolExecuteReply>;
}

/** Default wait for a reply: long enough for an approval (60 s) and a tool's default limit (300 s). */
export const DEFAULT_TOOL_CALL_TIMEOUT_MS = 400_000;

export function createToolClient(conn: GeodeConnection): ToolClient {
  return {
    async execute(call, options = {}) {
      const body = await requestJson(conn.nc, conn.names.toolExecute, call, {
        timeoutMs: options.timeoutMs ?? DEFAULT_TOOL_CALL_TIMEOUT_MS,
        signal: options.signal,
      });
      const parsed = ToolExecuteReplySchema.safeParse(body);
      if (!parsed.success) throw new GeodeError(ErrorCode.Internal, "malformed reply from tool-executor");
      return parsed.data;
    },
  };
}
