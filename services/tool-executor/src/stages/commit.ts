import type { Receipt, ReceiptRef, ToolExecuteReply } from "@geode/contracts";
import { receiptRef } from "@geode/state";
import { completedTimeline, type ToolCall, toolReply } from "./tool-call.js";

/**
 * Receipt commit: the result, PostToolUse's verdict and context are stored on the receipt with a
 * revision-checked update (the lease ends with it), then `tool.completed` and the reply.
 */
export async function commit(call: ToolCall): Promise<ToolExecuteReply> {
  const { result } = call;
  const receipt = call.lease ? await commitReceipt(call) : null;
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

async function commitReceipt(call: ToolCall): Promise<ReceiptRef | null> {
  if (!call.lease) return null;
  const held = await call.lease.stop();
  call.lease = null;
  const final: Receipt = {
    ...held.receipt,
    state: "completed",
    lease_until: null,
    completed_at: Date.now(),
    result: call.result.result,
    has_error: call.result.has_error,
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
