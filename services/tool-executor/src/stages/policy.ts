import { ErrorCode, GeodeError, type ToolExecuteReply } from "@geode/contracts";
import { isEffectful, refuse, requireOperationKey, type ToolCall } from "./tool-call.js";

/** Original policy: an operator's deny is final, before any middleware or hook sees the call. */
export function originalPolicy(call: ToolCall): ToolExecuteReply | undefined {
  const denied = call.deps.policy(call.request.tool_name);
  return denied ? refuse(call, "denied", denied) : undefined;
}

/**
 * Policy + schema validation of the call as transformed (tool_request) or rewritten (PreToolUse):
 * the policy again (a deny stays final), the tool must exist, its arguments must match its
 * `input_schema`, and an effectful tool needs an operation key. On success the call runs `name`
 * with `args` from now on.
 */
export async function checkCall(
  call: ToolCall,
  name: string,
  args: Record<string, unknown>,
  what = "arguments",
): Promise<ToolExecuteReply | undefined> {
  const { deps } = call;
  const denied = deps.policy(name);
  if (denied) return refuse(call, "denied", denied, { name, args });
  const tool = await deps.tools.resolve(name);
  if (!tool)
    throw new GeodeError(ErrorCode.UnknownTool, `unknown tool: ${name}`, { details: { tool_name: name } });
  const problem = deps.validator.problem(tool.definition.input_schema, args);
  if (problem !== null)
    throw new GeodeError(ErrorCode.SchemaInvalid, what === "arguments" ? problem : `${what}: ${problem}`, {
      details: { tool_name: name },
    });
  if (isEffectful(tool.definition)) requireOperationKey(call.request.operation_key, call.correlation);
  call.tool = tool;
  call.args = args;
  return undefined;
}
