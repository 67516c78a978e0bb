import { decodeJson, encodeJson, ensureBucket } from "@geode/bus";
import { runCli } from "@geode/cli";
import { captureIO } from "@geode/cli/testing";
import { type EventEnvelope, receiptStorageKey } from "@geode/contracts";
import { startHookDispatcher } from "@geode/hook-dispatcher";
import { createToolClient } from "@geode/runtime";
import { useTestEnv, waitFor } from "@geode/testing";
import { startToolExecutor } from "@geode/tool-executor";
import { describe, expect, it } from "vitest";
import { recordingTool } from "./tools-support.js";

const env = useTestEnv();

const io = () => captureIO({ ...process.env, ...env().env });

/** What an executor leaves behind between admission and commit (no lease: written before leases). */
const admittedReceipt = (key: string, extra: Record<string, unknown> = {}) =>
  encodeJson({
    key,
    state: "admitted",
    tool_name: "mail.send",
    arguments_sha256: "0".repeat(64),
    correlation: { session_id: "s", tool_call_id: "c" },
    admitted_at: Date.now(),
    completed_at: null,
    result: null,
    has_error: null,
    status: null,
    ...extra,
  });

describe("geode receipts and approvals", () => {
  it("an operator resolves an indeterminate receipt; the executor then replays it and the event is recorded", async () => {
    const { nc, names } = env();
    const tool = recordingTool("mail.send", "communication");
    const dispatcher = await startHookDispatcher({ nc, names });
    const executor = await startToolExecutor({ nc, names, tools: [tool] });
    const kv = await ensureBucket(nc, names, "toolReceipts");
    // What a crashed executor leaves behind: an admission without a result.
    const key = "newsletter 2024/05";
    await kv.create(receiptStorageKey(key), admittedReceipt(key));
    const recovery: EventEnvelope[] = [];
    const sub = nc.subscribe(names.event("tool_recovery_failed"), {
      callback: (_e, m) => {
        recovery.push(decodeJson(m.data) as EventEnvelope);
      },
    });
    try {
      const client = createToolClient({ nc, names });
      const call = {
        tool_name: "mail.send",
        arguments: {},
        correlation: { session_id: "s" },
        operation_key: key,
      };
      await expect(client.execute(call)).resolves.toMatchObject({ status: "indeterminate", executed: false });

      // One still running: its executor holds the lease for another minute.
      const leaseUntil = Date.now() + 60_000;
      await kv.create("running-op", admittedReceipt("running-op", { lease_until: leaseUntil }));
      const ls = io();
      expect(await runCli(["receipts", "ls", "--state", "admitted"], ls)).toBe(0);
      expect(ls.text()).toContain("LEASE");
      const line = (k: string) =>
        ls
          .text()
          .split("\n")
          .find((l) => l.startsWith(k)) ?? "";
      expect(line(key)).toContain("mail.send");
      expect(line(key)).toContain("lapsed");
      expect(line("running-op")).toContain(`running until ${new Date(leaseUntil).toISOString()}`);
      const refused = io();
      expect(await runCli(["receipts", "resolve", "running-op", "--as", "failed"], refused)).toBe(1);
      expect(refused.text()).toContain("still running");

      const resolve = io();
      expect(
        await runCli(
          ["receipts", "resolve", key, "--as", "failed", "--reason", "bounced", "--by", "ops"],
          resolve,
        ),
      ).toBe(0);
      expect(resolve.text()).toContain("admitted → failed");
      const again = io();
      expect(await runCli(["receipts", "resolve", key, "--as", "completed"], again)).toBe(1);
      expect(again.text()).toContain("already failed");
      expect(await runCli(["receipts", "resolve", key, "--as", "maybe"], io())).toBe(2);

      const show = io();
      expect(await runCli(["receipts", "show", key], show)).toBe(0);
      expect(JSON.parse(show.text())).toMatchObject({
        state: "failed",
        resolution: { by: "ops", reason: "bounced" },
      });

      const replay = await client.execute(call);
      expect(replay).toMatchObject({
        status: "replayed",
        has_error: true,
        reason: "bounced",
        receipt: { state: "failed" },
      });
      expect(tool.calls).toEqual([]);
      await waitFor(() => recovery.length === 1);
      expect(recovery[0]!.payload).toMatchObject({ receipt_key: key, resolution: "failed", by: "ops" });
    } finally {
      sub.unsubscribe();
      await executor.stop();
      await dispatcher.stop();
    }
  });

  it("approvals watch --auto answers approval requests for scripts", async () => {
    const { nc, names } = env();
    const tool = recordingTool("db.migrate", "admin", { requires_approval: true });
    const dispatcher = await startHookDispatcher({ nc, names });
    const executor = await startToolExecutor({ nc, names, tools: [tool] });
    const watch = io();
    const watching = runCli(
      ["approvals", "watch", "--auto", "allow", "--approver", "ci-bot", "--count", "1"],
      watch,
    );
    try {
      await waitFor(() => watch.text().includes("watching approvals"));
      const reply = await createToolClient({ nc, names }).execute({
        tool_name: "db.migrate",
        arguments: { to: "v2" },
        correlation: { session_id: "s", tool_call_id: "m-1" },
      });
      expect(reply.status).toBe("completed");
      expect(tool.calls).toEqual([{ to: "v2" }]);
      expect(await watching).toBe(0);
      expect(watch.text()).toContain("db.migrate (admin)");
      expect(watch.text()).toContain("→ allow");
    } finally {
      await executor.stop();
      await dispatcher.stop();
    }
  });
});
