import {
  decisionReason,
  isBlocked,
  SANITIZE_LIMITS,
  sanitizePayload,
  type ToolExecuteReply,
} from "@geode/contracts";
import type { ToolCall } from "./tool-call.js";

/**
 * PostToolUse (continue / add_context / block) after the terminal ran or a wrapper answered.
 * The effect already happened: a dispatcher that cannot be reached is recorded in the reason,
 * not a reason to fail the call. Never ends the call early; the receipt commit follows. A result
 * too large for a hook payload is bounded here as the dispatcher would bound it (handlers see the
 * same), so the invocation fits on the bus whatever the result's size.
 */
export async function postToolUse(call: ToolCall): Promise<ToolExecuteReply | undefined> {
  const { result } = call;
  call.status = result.has_error ? "failed" : "completed";
  try {
    const payload = {
      tool_name: call.definition.name,
      arguments: call.args,
      result: result.result,
      has_error: result.has_error,
      executed: call.entered,
    };
    const post = await call.deps.invokeHook(
      "PostToolUse",
      call.terminalRef || isLarge(result.result) ? (sanitizePayload(payload) as typeof payload) : payload,
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

/** Over a hook payload's bound: the dispatcher would cut it anyway. */
function isLarge(result: Record<string, unknown>): boolean {
  return Buffer.byteLength(JSON.stringify(result), "utf8") > SANITIZE_LIMITS.maxPayloadBytes;
}
