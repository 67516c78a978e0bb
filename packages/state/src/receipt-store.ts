import type { GeodeConnection } from "@geode/bus";
import {
  maskSecretsDeep,
  type Receipt,
  type ReceiptRef,
  ReceiptSchema,
  type ReceiptState,
  receiptStorageKey,
} from "@geode/contracts";
import { KvRecords, type Revisioned, type StoreOptions } from "./kv-records.js";

export type Admission =
  | { admitted: true; receipt: Receipt; revision: number }
  | { admitted: false; receipt: Receipt; revision: number };

/** A receipt as stored at one revision. */
export interface StoredReceipt {
  receipt: Receipt;
  revision: number;
}

/**
 * A receipt with the wire's text in it masked: the tool's result (read back whole by a replay, so
 * only secrets are masked, nothing cut), the handlers' context, the correlation and an operator's
 * reason. The key stays as it is (it names the storage key).
 */
function cleanReceipt(r: Receipt): Receipt {
  return {
    ...r,
    correlation: maskSecretsDeep(r.correlation),
    result: maskSecretsDeep(r.result),
    ...(r.additional_context === undefined
      ? {}
      : { additional_context: maskSecretsDeep(r.additional_context) }),
    ...(r.resolution
      ? { resolution: { ...r.resolution, reason: maskSecretsDeep(r.resolution.reason) } }
      : {}),
  };
}

export function receiptRef(receipt: Receipt, revision: number): ReceiptRef {
  return { key: receipt.key, state: receipt.state, revision };
}

/**
 * Durable admission receipts, KV `{ns}_tool_receipts`, key = the operation key (or
 * `sha256.<hex>` of it). Owner: the tool-executor, which admits (create-if-absent) before an
 * effectful terminal runs, renews its lease while it runs, and commits (revision-checked) after
 * PostToolUse; the one other writer is
 * an operator resolving an admitted receipt (`geode receipts resolve`), revision-checked too.
 */
export class ReceiptStore {
  private constructor(private readonly records: KvRecords<Receipt>) {}

  static async open(conn: GeodeConnection, options: StoreOptions = {}): Promise<ReceiptStore> {
    return new ReceiptStore(
      await KvRecords.open(
        conn,
        "toolReceipts",
        { parse: (raw) => ReceiptSchema.parse(raw), clean: cleanReceipt },
        options,
      ),
    );
  }

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
      const revision = await this.records.create(kvKey, receipt);
      if (revision !== null) return { admitted: true, receipt, revision };
      const existing = await this.get(key);
      // Deleted between our create and get (a released admission): try to admit again.
      if (existing) return { admitted: false, ...existing };
    }
    throw new Error(`could not admit receipt ${key}: it keeps changing`);
  }

  /** The receipt of an operation key, or null if none (or released). */
  async get(key: string): Promise<StoredReceipt | null> {
    let found: Revisioned<Receipt> | null;
    try {
      found = await this.records.read(receiptStorageKey(key));
    } catch (cause) {
      throw new Error(`receipt ${key} is not a valid receipt`, { cause });
    }
    return found ? { receipt: found.value, revision: found.revision } : null;
  }

  /** Every receipt (optionally only those in `state`), oldest admission first. */
  async list(state?: ReceiptState): Promise<Receipt[]> {
    const rows = (await this.records.list()).map((r) => r.value);
    return rows
      .filter((r) => state === undefined || r.state === state)
      .sort((a, b) => a.admitted_at - b.admitted_at);
  }

  /**
   * Moves the lease of an admitted receipt to `leaseUntil` if nobody changed it since it was
   * `held`; null when someone did (an operator's resolution): the lease is lost.
   */
  async renew(held: StoredReceipt, leaseUntil: number): Promise<StoredReceipt | null> {
    const receipt: Receipt = { ...held.receipt, lease_until: leaseUntil };
    const revision = await this.records.update(receiptStorageKey(receipt.key), receipt, held.revision);
    return revision === null ? null : { receipt, revision };
  }

  /**
   * Writes the receipt if nobody changed it since `revision`; returns the new revision. A
   * concurrent change throws (the caller reports what is stored now).
   */
  async commit(receipt: Receipt, revision: number): Promise<number> {
    const next = await this.records.update(receiptStorageKey(receipt.key), receipt, revision);
    if (next === null) throw new Error(`receipt ${receipt.key} changed since revision ${revision}`);
    return next;
  }

  /**
   * An operator's resolution of an admitted receipt (its outcome checked in the outside world).
   * Returns the new revision, or null when the receipt changed since `revision`.
   */
  resolve(receipt: Receipt, revision: number): Promise<number | null> {
    return this.records.update(receiptStorageKey(receipt.key), receipt, revision);
  }

  /** Removes an admission whose effect certainly did not happen (revision-checked). */
  async release(key: string, revision: number): Promise<void> {
    await this.records.delete(receiptStorageKey(key), revision);
  }
}
