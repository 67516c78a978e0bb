import type { ToolExecuteReply } from "@geode/contracts";
import {
  type DeepReadonly,
  MiddlewareError,
  runToolRequest,
  type ToolCallRequest,
  thaw,
} from "@geode/middleware";
import { checkCall } from "./policy.js";
import { type ToolCall, toolReply } from "./tool-call.js";

/**
 * `tool_request` middleware (ordered transforms), then policy + schema validation of what it
 * produced. A middleware error fails the call before any hook runs.
 */
export async function toolRequest(call: ToolCall): Promise<ToolExecuteReply | undefined> {
  const { deps } = call;
  let transformed: DeepReadonly<ToolCallRequest>;
  try {
    transformed = await runToolRequest(
      deps.middleware,
      { tool_name: call.request.tool_name, arguments: call.request.arguments },
      { correlation: call.correlation, events: deps.events },
    );
  } catch (err) {
    if (err instanceof MiddlewareError) return toolReply("failed", { has_error: true, reason: err.message });
    throw err;
  }
  return checkCall(call, transformed.tool_name, thaw<Record<string, unknown>>(transformed.arguments));
}
