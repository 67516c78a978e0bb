import { decisionReason, isBlocked, type ToolExecuteReply } from "@geode/contracts";
import type { ToolCall } from "./tool-call.js";

/**
 * PostToolUse (continue / add_context / block) after the terminal ran or a wrapper answered.
 * The effect already happened: a dispatcher that cannot be reached is recorded in the reason,
 * not a reason to fail the call. Never ends the call early; the receipt commit follows.
 */
export async function postToolUse(call: ToolCall): Promise<ToolExecuteReply | undefined> {
  const { result } = call;
  call.status = result.has_error ? "failed" : "completed";
  try {
    const post = await call.deps.invokeHook(
      "PostToolUse",
      {
        tool_name: call.definition.name,
        arguments: call.args,
        result: result.result,
        has_error: result.has_error,
        executed: call.entered,
      },
      call.correlation,
      { timeoutMs: call.hookTimeoutMs },
    );
    for (const d of post.decisions)
      if (d.action === "add_context" && d.reason) call.additionalContext.push(d.reason);
    if (isBlocked(post)) {
      call.status = "blocked";
      call.reason = decisionReason(post, ["block"], "blocked");
    }
  } catch (err) {
    call.log.warn({ err_type: err instanceof Error ? err.name : typeof err }, "PostToolUse could not run");
    call.reason = `PostToolUse not run: ${err instanceof Error ? err.message : String(err)}`;
  }
  return undefined;
}
