import {
  isResultRef,
  type Receipt,
  receiptReply,
  registeredMcpOrigin,
  sha256,
  type ToolExecuteReply,
  toolCalledPayload,
  unresolvedResultReply,
} from "@geode/contracts";
import { ReceiptLease } from "../receipt-lease.js";
import { requireOperationKey, type ToolCall } from "./tool-call.js";

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
    toolCalledPayload(
      "runtime",
      definition.name,
      definition.effect,
      call.args,
      argumentsSha,
      registeredMcpOrigin(definition),
    ),
    correlation,
  );
  if (!call.effectful) return undefined;
  const leaseMs = deps.config.receiptLeaseMs;
  const admitted = await deps.receipts.admit(
    requireOperationKey(call.request.operation_key, correlation),
    { tool_name: definition.name, arguments_sha256: argumentsSha, correlation: { ...correlation } },
    Date.now() + leaseMs,
  );
  // The key is taken: replayed, in_progress (its lease is live) or indeterminate (lapsed).
  if (!admitted.admitted) return replay(call, admitted.receipt, admitted.revision);
  call.lease = ReceiptLease.hold(deps.receipts, admitted, leaseMs, call.log);
  return undefined;
}

/**
 * The reply for a key that is taken. A stored result reference whose object has expired from
 * `{ns}_results` is answered as such (an error result naming it), never by running the call again.
 */
async function replay(call: ToolCall, receipt: Receipt, revision: number): Promise<ToolExecuteReply> {
  const reply = receiptReply(receipt, revision);
  if (reply.status !== "replayed" || !isResultRef(reply.result)) return reply;
  // NATS failing under the check is no proof of expiry: pass the reference on; the client reads it.
  const stored = await call.deps.results.has(reply.result).catch(() => true);
  if (stored) return reply;
  return unresolvedResultReply(
    reply,
    reply.result,
    `it is no longer in ${call.deps.names.resultStore} (results are kept for the bucket's TTL)`,
  );
}
