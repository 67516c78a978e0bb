import { z } from "zod";
import { RequestCorrelationSchema } from "./correlation.js";
import { FreeObjectSchema } from "./hook-payloads.js";
import { isReceiptRunning, type Receipt, ReceiptRefSchema } from "./receipt.js";

/* The `{ns}.tool.execute` leg's request and reply (the reply to a call whose key has a receipt included). */

export const ToolExecuteRequestSchema = z.strictObject({
  tool_name: z.string().min(1),
  arguments: FreeObjectSchema,
  correlation: RequestCorrelationSchema,
  operation_key: z.string().min(1).max(256).optional(),
  timeout_ms: z.number().int().positive().optional(),
});

/**
 * The logical operation of a tool call, whose receipt an effectful tool needs: its
 * `operation_key`, else `{session_id}.{tool_call_id}`; null when it has neither.
 */
export function operationKeyOf(call: {
  operation_key?: string | undefined;
  correlation?: { session_id?: string; tool_call_id?: string } | undefined;
}): string | null {
  if (call.operation_key !== undefined) return call.operation_key;
  const { session_id, tool_call_id } = call.correlation ?? {};
  return session_id && tool_call_id ? `${session_id}.${tool_call_id}` : null;
}

const ToolCallStatusSchema = z.enum([
  "completed",
  "blocked",
  "denied",
  "replayed",
  "in_progress",
  "indeterminate",
  "failed",
]);
export type ToolCallStatus = z.infer<typeof ToolCallStatusSchema>;

export const ToolExecuteReplySchema = z.strictObject({
  status: ToolCallStatusSchema,
  result: FreeObjectSchema,
  has_error: z.boolean(),
  executed: z.boolean(),
  additional_context: z.array(z.string()),
  reason: z.string(),
  receipt: ReceiptRefSchema.nullable(),
});
export type ToolExecuteReply = z.infer<typeof ToolExecuteReplySchema>;

/**
 * The reply for an operation key that already has a receipt (what a retry gets): `replayed` with
 * the stored result once it completed (or an operator resolved it); `in_progress` while the
 * executor running it holds its lease (nothing executed; retry later); `indeterminate` once the
 * lease lapsed (outcome unknown; never re-executed automatically). `note` prefixes the reason.
 */
export function receiptReply(
  receipt: Receipt,
  revision: number,
  options: { now?: number; note?: string } = {},
): ToolExecuteReply {
  const now = options.now ?? Date.now();
  const because = (text: string) => [options.note ?? "", text].filter((t) => t !== "").join("; ");
  const reply: ToolExecuteReply = {
    status: "replayed",
    result: {},
    has_error: false,
    executed: false,
    additional_context: [],
    reason: "",
    receipt: { key: receipt.key, state: receipt.state, revision },
  };
  if (isReceiptRunning(receipt, now)) {
    const until = new Date(receipt.lease_until ?? now).toISOString();
    const reason = because(`operation ${receipt.key} is still running (lease until ${until}); retry later`);
    return { ...reply, status: "in_progress", reason };
  }
  if (receipt.state === "admitted")
    return {
      ...reply,
      status: "indeterminate",
      has_error: true,
      reason: because(
        `operation ${receipt.key} was admitted but never completed; its outcome is unknown (resolve it with 'geode receipts resolve')`,
      ),
    };
  return {
    ...reply,
    result: receipt.result ?? {},
    has_error: receipt.has_error ?? receipt.state === "failed",
    additional_context: receipt.additional_context ?? [],
    reason: because(receipt.state === "failed" ? (receipt.resolution?.reason ?? "resolved as failed") : ""),
  };
}
