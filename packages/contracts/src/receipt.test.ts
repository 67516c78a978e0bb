import { describe, expect, it } from "vitest";
import { isReceiptRunning, type Receipt, ReceiptSchema } from "./receipt.js";
import { receiptReply, ToolExecuteReplySchema } from "./tool-execute.js";

const NOW = 1_700_000_000_000;
const admitted: Receipt = {
  key: "s.c-1",
  state: "admitted",
  tool_name: "mail.send",
  arguments_sha256: "0".repeat(64),
  correlation: {},
  admitted_at: NOW - 5_000,
  lease_until: NOW + 1_000,
  completed_at: null,
  result: null,
  has_error: null,
  status: null,
};

describe("receipts", () => {
  it("an admitted receipt is running while its lease is live; without one (older receipts) it is not", () => {
    expect(isReceiptRunning(admitted, NOW)).toBe(true);
    expect(isReceiptRunning(admitted, NOW + 1_000)).toBe(false);
    expect(isReceiptRunning({ ...admitted, lease_until: null }, NOW)).toBe(false);
    const { lease_until: _none, ...older } = admitted;
    expect(ReceiptSchema.parse(older)).toEqual(older);
    expect(isReceiptRunning(older, NOW)).toBe(false);
    expect(isReceiptRunning({ ...admitted, state: "completed" }, NOW)).toBe(false);
  });

  it("receiptReply answers a taken key: in_progress, indeterminate, or the stored result", () => {
    const running = receiptReply(admitted, 4, { now: NOW });
    expect(ToolExecuteReplySchema.parse(running)).toEqual(running);
    expect(running).toMatchObject({
      status: "in_progress",
      has_error: false,
      executed: false,
      result: {},
      receipt: { key: "s.c-1", state: "admitted", revision: 4 },
    });
    expect(running.reason).toBe(
      `operation s.c-1 is still running (lease until ${new Date(NOW + 1_000).toISOString()}); retry later`,
    );
    expect(receiptReply(admitted, 4, { now: NOW + 2_000 })).toMatchObject({
      status: "indeterminate",
      has_error: true,
    });
    const completed: Receipt = {
      ...admitted,
      state: "completed",
      lease_until: null,
      result: { id: 9 },
      has_error: false,
      additional_context: ["c"],
    };
    expect(receiptReply(completed, 5, { now: NOW })).toMatchObject({
      status: "replayed",
      result: { id: 9 },
      has_error: false,
      additional_context: ["c"],
      reason: "",
    });
    const failed: Receipt = {
      ...completed,
      state: "failed",
      has_error: true,
      resolution: { by: "ops", reason: "bounced", at: NOW },
    };
    expect(receiptReply(failed, 6, { now: NOW }).reason).toBe("bounced");
    expect(receiptReply(failed, 6, { now: NOW, note: "no reply within 5 ms" }).reason).toBe(
      "no reply within 5 ms; bounced",
    );
  });
});
