import { encodeJson, isRevisionConflict } from "@geode/bus";
import { type Receipt, type ReceiptRef, ReceiptSchema, receiptStorageKey } from "@geode/contracts";
import type { KV } from "@nats-io/kv";

export type Admission =
  | { admitted: true; receipt: Receipt; revision: number }
  | { admitted: false; receipt: Receipt; revision: number };

/** A receipt as stored at one revision. */
export interface StoredReceipt {
  receipt: Receipt;
  revision: number;
}

/**
 * Durable admission receipts in KV `{ns}_tool_receipts`: created with create-if-absent before an
 * effectful terminal runs, leased while it runs, committed (revision-checked) after PostToolUse.
 */
export class ReceiptStore {
  constructor(private readonly kv: KV) {}

  /** Admits an operation holding its lease until `leaseUntil`, or returns the receipt that holds its key. */
  async admit(
    key: string,
    fields: Pick<Receipt, "tool_name" | "arguments_sha256" | "correlation">,
    leaseUntil: number,
  ): Promise<Admission> {
    const receipt: Receipt = {
      key,
      state: "admitted",
      ...fields,
      admitted_at: Date.now(),
      lease_until: leaseUntil,
      completed_at: null,
      result: null,
      has_error: null,
      status: null,
    };
    const kvKey = receiptStorageKey(key);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const revision = await this.kv.create(kvKey, encodeJson(receipt));
        return { admitted: true, receipt, revision };
      } catch (err) {
        if (!isRevisionConflict(err)) throw err;
      }
      const existing = await this.get(key);
      // Deleted between our create and get (a released admission): try to admit again.
      if (existing) return { admitted: false, ...existing };
    }
    throw new Error(`could not admit receipt ${key}: it keeps changing`);
  }

  /** The receipt of an operation key, or null if none (or released). */
  async get(key: string): Promise<StoredReceipt | null> {
    const entry = await this.kv.get(receiptStorageKey(key));
    if (entry?.operation !== "PUT") return null;
    const parsed = ReceiptSchema.safeParse(entry.json());
    if (!parsed.success) throw new Error(`receipt ${key} is not a valid receipt`);
    return { receipt: parsed.data, revision: entry.revision };
  }

  /** Moves the lease of an admitted receipt to `leaseUntil` if nobody changed it since `revision`. */
  async renew(held: StoredReceipt, leaseUntil: number): Promise<StoredReceipt> {
    const receipt: Receipt = { ...held.receipt, lease_until: leaseUntil };
    return { receipt, revision: await this.commit(receipt, held.revision) };
  }

  /** Writes the receipt if nobody changed it since `revision`; returns the new revision. */
  async commit(receipt: Receipt, revision: number): Promise<number> {
    return this.kv.update(receiptStorageKey(receipt.key), encodeJson(receipt), revision);
  }

  /** Removes an admission whose effect certainly did not happen (revision-checked). */
  async release(key: string, revision: number): Promise<void> {
    try {
      await this.kv.delete(receiptStorageKey(key), { previousSeq: revision });
    } catch (err) {
      if (!isRevisionConflict(err)) throw err;
    }
  }
}

export function receiptRef(receipt: Receipt, revision: number): ReceiptRef {
  return { key: receipt.key, state: receipt.state, revision };
}
