import type { Receipt } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { admission } from "./admission.js";
import { checkCall } from "./policy.js";
import { stageTool, useStageHarness } from "./stage-fixture.js";

const LEASE_MS = 5_000;
const { h } = useStageHarness({
  config: { receiptLeaseMs: LEASE_MS },
  tools: [stageTool("t.read"), stageTool("t.write", { effect: "communication" })],
});

async function shaped(name: string, key: string) {
  const call = h().open({ tool_name: name, operation_key: key, correlation: { tool_call_id: key } });
  await checkCall(call, name, { to: "x" });
  return call;
}

const stored = async (key: string) => (await h().deps.receipts.get(key))?.receipt as Receipt;

describe("admission stage", () => {
  it("records the pending-call checkpoint; a read tool needs no receipt", async () => {
    const call = await shaped("t.read", "read-1");
    expect(await admission(call)).toBeUndefined();
    expect(call.lease).toBeNull();
    expect(h().seen.at(-1)).toMatchObject({
      kind: "tool.called",
      payload: { tool_name: "t.read", effect: "read" },
    });
    expect(await h().deps.receipts.get("read-1")).toBeNull();
  });

  it("admits an effectful call with a lease it then holds", async () => {
    const call = await shaped("t.write", "op-1");
    const before = Date.now();
    expect(await admission(call)).toBeUndefined();
    const receipt = await stored("op-1");
    expect(receipt).toMatchObject({ key: "op-1", state: "admitted", tool_name: "t.write" });
    expect(receipt.lease_until).toBeGreaterThanOrEqual(before + LEASE_MS);
    expect(call.lease?.current.receipt.key).toBe("op-1");
    await call.lease?.stop();
  });

  it("a taken key is answered from its receipt: in_progress under a live lease, indeterminate once it ended", async () => {
    const first = await shaped("t.write", "op-2");
    await admission(first);
    const second = await shaped("t.write", "op-2");
    expect(await admission(second)).toMatchObject({
      status: "in_progress",
      executed: false,
      receipt: { key: "op-2", state: "admitted" },
    });
    expect(second.lease).toBeNull();
    await first.lease?.end();
    expect(await admission(await shaped("t.write", "op-2"))).toMatchObject({
      status: "indeterminate",
      has_error: true,
    });
  });
});
