import type { RuntimeEventBus } from "@geode/bus";
import { correlation as fillCorrelation, isReceiptRunning, type Receipt } from "@geode/contracts";
import type { ReceiptStore } from "./receipt-store.js";

export interface ReceiptResolution {
  key: string;
  as: "completed" | "failed";
  /** The operator who checked the outside world. */
  by: string;
  reason?: string;
}

/** What became of a resolution: the new revision, or why nothing was written. */
export type ReceiptResolutionResult =
  | { resolved: true; revision: number; receipt: Receipt }
  | {
      resolved: false;
      why: "not_found" | "not_admitted" | "running" | "changed";
      message: string;
      receipt?: Receipt;
    };

const time = (ms: number | null | undefined) => (ms == null ? "-" : new Date(ms).toISOString());

/**
 * Resolves an admitted receipt whose outcome is unknown (its lease lapsed) as completed or failed,
 * after an operator checked the outside world. Revision-checked, so a concurrent commit is never
 * overwritten; recorded as a `tool_recovery_succeeded` / `tool_recovery_failed` event naming the
 * operator. Shared by `geode receipts resolve` and the console.
 */
export async function resolveReceipt(
  deps: { receipts: ReceiptStore; events: RuntimeEventBus },
  resolution: ReceiptResolution,
): Promise<ReceiptResolutionResult> {
  const { key, as, by } = resolution;
  const reason = resolution.reason ?? `resolved as ${as} by ${by}`;
  const { receipts, events } = deps;
  const found = await receipts.get(key);
  if (!found) return { resolved: false, why: "not_found", message: `no receipt ${key}` };
  if (found.receipt.state !== "admitted")
    return {
      resolved: false,
      why: "not_admitted",
      message: `receipt ${key} is already ${found.receipt.state}; only an admitted receipt can be resolved`,
      receipt: found.receipt,
    };
  if (isReceiptRunning(found.receipt))
    return {
      resolved: false,
      why: "running",
      message: `receipt ${key} is still running (its executor holds the lease until ${time(found.receipt.lease_until)}); resolve it once the lease lapsed`,
      receipt: found.receipt,
    };
  const now = Date.now();
  const resolved: Receipt = {
    ...found.receipt,
    state: as,
    completed_at: now,
    result: as === "failed" ? { error: reason } : { resolved_by_operator: true },
    has_error: as === "failed",
    status: as === "failed" ? "failed" : "completed",
    lease_until: null,
    resolution: { by, reason, at: now },
  };
  const revision = await receipts.resolve(resolved, found.revision);
  if (revision === null)
    return {
      resolved: false,
      why: "changed",
      message: `receipt ${key} changed while resolving it; look again`,
      receipt: found.receipt,
    };
  const corr = fillCorrelation(
    Object.fromEntries(
      Object.entries(found.receipt.correlation).filter(([k]) =>
        ["session_id", "turn_id", "step_id", "run_id", "tool_call_id"].includes(k),
      ),
    ),
  );
  await events.emit(
    as === "completed" ? "tool_recovery_succeeded" : "tool_recovery_failed",
    { receipt_key: key, tool_name: found.receipt.tool_name, resolution: as, reason, by, revision },
    corr,
  );
  return { resolved: true, revision, receipt: resolved };
}
