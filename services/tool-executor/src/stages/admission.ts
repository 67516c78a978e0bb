import { isReceiptRunning, sha256, type ToolExecuteReply } from "@geode/contracts";
import { ReceiptLease } from "../receipt-lease.js";
import { receiptRef, type StoredReceipt } from "../receipt-store.js";
import { operationKeyOf, type ToolCall, toolReply } from "./tool-call.js";

/**
 * Pending-call checkpoint (timeline `tool.called`) and effect admission: an effectful tool's
 * operation key gets a durable receipt (create-if-absent) whose lease this executor holds while it
 * runs the call. A key that is already taken is answered from its receipt; nothing runs.
 */
export async function admission(call: ToolCall): Promise<ToolExecuteReply | undefined> {
  const { deps, definition, correlation } = call;
  const argumentsSha = sha256(call.args);
  void deps.events.timeline(
    "tool.called",
    { tool_name: definition.name, effect: definition.effect, arguments_sha256: argumentsSha },
    correlation,
  );
  if (!call.effectful) return undefined;
  const leaseMs = deps.config.receiptLeaseMs;
  const admitted = await deps.receipts.admit(
    operationKeyOf(call.request.operation_key, correlation),
    { tool_name: definition.name, arguments_sha256: argumentsSha, correlation: { ...correlation } },
    Date.now() + leaseMs,
  );
  if (!admitted.admitted) return takenKeyReply(admitted);
  call.lease = ReceiptLease.hold(deps.receipts, admitted, leaseMs, call.log);
  return undefined;
}

/**
 * The reply for an operation key another call holds: `replayed` with the stored result once it
 * completed (or an operator resolved it); `in_progress` while the executor running it holds its
 * lease (retry later); `indeterminate` once the lease lapsed (never re-executed automatically).
 */
export function takenKeyReply({ receipt, revision }: StoredReceipt, now = Date.now()): ToolExecuteReply {
  const ref = receiptRef(receipt, revision);
  if (isReceiptRunning(receipt, now))
    return toolReply("in_progress", {
      reason: `operation ${receipt.key} is still running (lease until ${new Date(receipt.lease_until ?? now).toISOString()}); retry later`,
      receipt: ref,
    });
  if (receipt.state === "admitted")
    return toolReply("indeterminate", {
      has_error: true,
      reason: `operation ${receipt.key} was admitted but never completed; its outcome is unknown (resolve it with 'geode receipts resolve')`,
      receipt: ref,
    });
  return toolReply("replayed", {
    result: receipt.result ?? {},
    has_error: receipt.has_error ?? receipt.state === "failed",
    additional_context: receipt.additional_context ?? [],
    reason: receipt.state === "failed" ? (receipt.resolution?.reason ?? "resolved as failed") : "",
    receipt: ref,
  });
}
