import { describe, expect, it } from "vitest";
import { admission } from "./admission.js";
import { commit } from "./commit.js";
import { checkCall } from "./policy.js";
import { stageTool, useStageHarness } from "./stage-fixture.js";

const { h } = useStageHarness({
  tools: [stageTool("t.read"), stageTool("t.write", { effect: "mutation" })],
});

async function finished(name: string, key: string) {
  const call = h().open({ tool_name: name, operation_key: key, correlation: { tool_call_id: key } });
  await checkCall(call, name, {});
  await admission(call);
  call.entered = true;
  call.result = { result: { sent: 1 }, has_error: false };
  call.additionalContext.push("noted");
  return call;
}

describe("commit stage", () => {
  it("stores the result on the receipt (lease ended) and replies with it", async () => {
    const call = await finished("t.write", "c-1");
    const reply = await commit(call);
    expect(reply).toMatchObject({
      status: "completed",
      result: { sent: 1 },
      executed: true,
      additional_context: ["noted"],
      receipt: { key: "c-1", state: "completed" },
    });
    const stored = await h().deps.receipts.get("c-1");
    expect(stored?.revision).toBe(reply.receipt?.revision);
    expect(stored?.receipt).toMatchObject({
      state: "completed",
      status: "completed",
      lease_until: null,
      result: { sent: 1 },
      additional_context: ["noted"],
    });
    expect(h().seen.at(-1)).toMatchObject({
      kind: "tool.completed",
      payload: { status: "completed", executed: true },
    });
  });

  it("a read tool has no receipt to commit", async () => {
    expect((await commit(await finished("t.read", "c-2"))).receipt).toBeNull();
  });

  it("a receipt an operator changed meanwhile is not overwritten; the reply names what is stored", async () => {
    const call = await finished("t.write", "c-3");
    const held = await call.lease!.stop();
    const resolved = {
      ...held.receipt,
      state: "failed",
      status: "failed",
      resolution: { by: "ops", reason: "x", at: 1 },
    };
    await h().deps.receipts.commit(resolved as typeof held.receipt, held.revision);
    const reply = await commit(call);
    expect(reply.receipt).toMatchObject({ key: "c-3", state: "failed" });
    expect((await h().deps.receipts.get("c-3"))?.receipt.state).toBe("failed");
  });
});
