import type { Receipt, ReceiptRef, ToolExecuteReply } from "@geode/contracts";
import type { ToolCallResult } from "@geode/middleware";
import { receiptRef } from "@geode/state";
import { completedTimeline, emitOffloaded, errorResult, type ToolCall, toolReply } from "./tool-call.js";

/**
 * Receipt commit: the result (by reference when it is large), PostToolUse's verdict and context
 * are stored on the receipt with a revision-checked update (the lease ends with it), then
 * `tool.completed` and the reply.
 */
export async function commit(call: ToolCall): Promise<ToolExecuteReply> {
  const result = await wireResult(call);
  const receipt = call.lease ? await commitReceipt(call, result) : null;
  completedTimeline(call, call.status, result.has_error);
  return toolReply(call.status, {
    result: result.result,
    has_error: result.has_error,
    executed: call.entered,
    additional_context: call.additionalContext,
    reason: call.reason,
    receipt,
  });
}

/**
 * The result as the receipt and the caller get it: itself, or over `resultInlineBytes` a reference
 * (the terminal's own when the result came through unchanged, else one this executor writes). A
 * result that cannot be stored becomes an error result: the effect ran, its result is lost.
 */
async function wireResult(call: ToolCall): Promise<ToolCallResult> {
  const { result } = call;
  try {
    const out = await call.deps.results.offload(result.result, {
      inlineBytes: call.deps.config.resultInlineBytes,
      writer: "tool-executor",
      toolName: call.definition.name,
      reuse: call.terminalRef ?? undefined,
    });
    if (out.ref) emitOffloaded(call, "reply", out.ref);
    return { result: out.result, has_error: result.has_error };
  } catch (err) {
    const message = `the result could not be stored in ${call.deps.names.resultStore}: ${(err as Error).message}`;
    call.log.warn({ err_type: err instanceof Error ? err.name : typeof err }, "result not stored");
    call.reason ||= message;
    return errorResult(message);
  }
}

async function commitReceipt(call: ToolCall, result: ToolCallResult): Promise<ReceiptRef | null> {
  if (!call.lease) return null;
  const held = await call.lease.stop();
  call.lease = null;
  const final: Receipt = {
    ...held.receipt,
    state: "completed",
    lease_until: null,
    completed_at: Date.now(),
    result: result.result,
    has_error: result.has_error,
    status: call.status,
    additional_context: call.additionalContext,
  };
  try {
    return receiptRef(final, await call.deps.receipts.commit(final, held.revision));
  } catch (err) {
    // Someone (an operator) changed the receipt meanwhile: report what is stored now.
    call.log.error({ err, receipt_key: final.key }, "receipt commit refused");
    const now = await call.deps.receipts.get(final.key).catch(() => null);
    return now ? receiptRef(now.receipt, now.revision) : null;
  }
}
