import { silentLogger } from "@geode/bus";
import { ReceiptStore } from "@geode/state";
import { useTestEnv, waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { ReceiptLease } from "./receipt-lease.js";

const env = useTestEnv();
const store = () => ReceiptStore.open({ nc: env().nc, names: env().names });
const fields = { tool_name: "t.write", arguments_sha256: "0".repeat(64), correlation: {} };

describe("ReceiptLease", () => {
  it("renews the lease every third of its length until stopped", async () => {
    const receipts = await store();
    const admitted = await receipts.admit("lease-1", fields, Date.now() + 300);
    const lease = ReceiptLease.hold(receipts, admitted, 300, silentLogger());
    await new Promise((r) => setTimeout(r, 700));
    const held = await lease.stop();
    expect(held.revision).toBeGreaterThan(admitted.revision);
    const stored = await receipts.get("lease-1");
    expect(stored).toEqual(held);
    expect(stored?.receipt.lease_until).toBeGreaterThan(Date.now() - 150);
    // Stopped: no more renewals.
    await new Promise((r) => setTimeout(r, 250));
    expect((await receipts.get("lease-1"))?.revision).toBe(held.revision);
  });

  it("end() lets the lease lapse at once", async () => {
    const receipts = await store();
    const admitted = await receipts.admit("lease-2", fields, Date.now() + 60_000);
    const lease = ReceiptLease.hold(receipts, admitted, 60_000, silentLogger());
    const ended = await lease.end();
    expect(ended.receipt.lease_until).toBeLessThanOrEqual(Date.now());
    expect((await receipts.get("lease-2"))?.receipt.lease_until).toBe(ended.receipt.lease_until);
  });

  it("a receipt changed by someone else (an operator's resolution) ends the renewals and is kept", async () => {
    const receipts = await store();
    const admitted = await receipts.admit("lease-3", fields, Date.now() + 300);
    const lease = ReceiptLease.hold(receipts, admitted, 300, silentLogger());
    const resolved = { ...admitted.receipt, state: "failed" as const, lease_until: null };
    const revision = await receipts.commit(resolved, (await receipts.get("lease-3"))!.revision);
    // The next renewal finds the receipt changed and gives the lease up for good.
    await waitFor(() => lease.isLost);
    expect((await receipts.get("lease-3"))?.revision).toBe(revision);
    expect(lease.isLost).toBe(true);
    await lease.end();
    expect((await receipts.get("lease-3"))?.receipt).toMatchObject({ state: "failed", lease_until: null });
  });
});
