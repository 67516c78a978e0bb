import { z } from "zod";
import { FreeObjectSchema } from "./hook-payloads.js";
import { sha256 } from "./sanitize.js";

const ReceiptStateSchema = z.enum(["admitted", "completed", "failed"]);
export type ReceiptState = z.infer<typeof ReceiptStateSchema>;
export const ReceiptRefSchema = z.strictObject({
  key: z.string(),
  state: ReceiptStateSchema,
  revision: z.number().int(),
});
export type ReceiptRef = z.infer<typeof ReceiptRefSchema>;

/** Stored receipt (KV `{ns}_tool_receipts`). */
export const ReceiptSchema = z.strictObject({
  key: z.string(),
  state: ReceiptStateSchema,
  tool_name: z.string(),
  arguments_sha256: z.string(),
  correlation: z.record(z.string(), z.unknown()),
  admitted_at: z.number().int(),
  /**
   * While `admitted`: the executor running the operation holds it until this time (epoch ms) and
   * renews it while it runs; a live lease means still running, a lapsed one means outcome unknown.
   * Null once the receipt is completed or failed; absent in receipts written before leases.
   */
  lease_until: z.number().int().nullable().optional(),
  completed_at: z.number().int().nullable(),
  result: FreeObjectSchema.nullable(),
  has_error: z.boolean().nullable(),
  status: z.string().nullable(),
  additional_context: z.array(z.string()).optional(),
  resolution: z
    .strictObject({ by: z.string(), reason: z.string(), at: z.number().int() })
    .nullable()
    .optional(),
});
export type Receipt = z.infer<typeof ReceiptSchema>;

/** Default length of a receipt lease (`GEODE_RECEIPT_LEASE_MS`). */
export const DEFAULT_RECEIPT_LEASE_MS = 10_000;

/**
 * An admitted receipt whose lease is live: its operation is still running (a second call gets
 * `in_progress`). An admitted receipt without a live lease has an unknown outcome (`indeterminate`).
 */
export function isReceiptRunning(receipt: Pick<Receipt, "state" | "lease_until">, now = Date.now()): boolean {
  return receipt.state === "admitted" && typeof receipt.lease_until === "number" && receipt.lease_until > now;
}

const KV_SAFE_KEY = /^[-/=\w]+(\.[-/=\w]+)*$/;

/**
 * The KV key of a receipt for an operation key: the key itself when NATS accepts it as a KV key,
 * else `sha256.<hex>` of it (the receipt keeps the original in `key`).
 */
export function receiptStorageKey(operationKey: string): string {
  return KV_SAFE_KEY.test(operationKey) && operationKey.length <= 256
    ? operationKey
    : `sha256.${sha256(operationKey)}`;
}
