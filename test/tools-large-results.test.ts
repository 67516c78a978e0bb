import { createHash } from "node:crypto";
import { decodeJson } from "@geode/bus";
import { runCli } from "@geode/cli";
import { captureIO } from "@geode/cli/testing";
import {
  type EventEnvelope,
  HookName,
  isResultRef,
  type ResultRef,
  SANITIZE_LIMITS,
  sanitizePayload,
  type ToolExecuteReply,
} from "@geode/contracts";
import { createToolClient } from "@geode/runtime";
import { ReceiptStore } from "@geode/state";
import { useTestEnv } from "@geode/testing";
import { DeliverPolicy } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { describe, expect, it } from "vitest";
import { recordingTool, remoteTool, startToolStack } from "./tools-support.js";

const env = useTestEnv();

const MiB = 1024 * 1024;

/** A result of about `bytes` of JSON that no truncation could pass for: rows of distinct text. */
function bigResult(bytes: number, tag: string): Record<string, unknown> {
  const rows: string[] = [];
  for (let i = 0, size = 0; size < bytes; i++) {
    const row = `${tag}-${i}-${createHash("sha256").update(`${tag}${i}`).digest("hex").repeat(15)}`;
    rows.push(row);
    size += row.length + 3;
  }
  return { tag, count: rows.length, rows };
}

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");

/** The `tool_result_offloaded` events stored in `{NS}_EVENTS` for one tool call. */
async function offloadedEvents(toolCallId: string): Promise<EventEnvelope[]> {
  const { js, names } = env();
  const consumer = await js.consumers.get(names.eventsStream, {
    filter_subjects: names.event("tool_result_offloaded"),
    deliver_policy: DeliverPolicy.All,
  });
  const found: EventEnvelope[] = [];
  const batch = await consumer.fetch({ max_messages: 100, expires: 1_000 });
  for await (const m of batch) {
    const e = decodeJson(m.data) as EventEnvelope;
    if (e.correlation.tool_call_id === toolCallId) found.push(e);
    if (m.info.pending === 0) break;
  }
  return found;
}

async function cliCall(args: string[]): Promise<{ code: number; reply: ToolExecuteReply }> {
  const io = captureIO({ ...process.env, ...env().env });
  const code = await runCli(["tool", "call", ...args, "--json"], io);
  return { code, reply: JSON.parse(io.stdout()) as ToolExecuteReply };
}

describe("large tool results travel by reference", () => {
  it("a 5 MiB result of a mutation tool reaches `geode tool call` whole; the receipt completes with the reference and a replay returns the same result", async () => {
    const { names } = env();
    const stack = await startToolStack(env());
    const full = bigResult(5 * MiB, "report");
    expect(jsonBytes(full)).toBeGreaterThan(5 * MiB);
    let calls = 0;
    const tool = await remoteTool(env(), { name: "report.export", effect: "mutation" }, () => {
      calls++;
      return { result: full };
    });
    const post: Array<Record<string, unknown>> = [];
    await stack.hook(HookName.PostToolUse, { name: "post-watch" }, (e) => {
      post.push(e.payload);
      return null;
    });
    try {
      const started = performance.now();
      const first = await cliCall(["report.export", "--key", "export-1", "--args", '{"month":"05"}']);
      expect(performance.now() - started).toBeLessThan(20_000);
      expect(first.code).toBe(0);
      expect(first.reply).toMatchObject({ status: "completed", has_error: false, executed: true });
      expect(first.reply.result).toEqual(full);
      expect(first.reply.receipt).toMatchObject({ key: "export-1", state: "completed" });

      // The receipt keeps the reference, not 5 MiB.
      const stored = await (await ReceiptStore.open({ nc: env().nc, names })).get("export-1");
      expect(stored?.receipt.state).toBe("completed");
      const ref = stored?.receipt.result as ResultRef;
      expect(isResultRef(ref)).toBe(true);
      expect(ref.bytes).toBe(jsonBytes(full));
      expect(ref.sha256).toBe(createHash("sha256").update(JSON.stringify(full)).digest("hex"));
      expect(jsonBytes(stored?.receipt)).toBeLessThan(2_048);

      // PostToolUse saw the bounded payload it always sees, not a reference and not 5 MiB.
      expect(post).toHaveLength(1);
      const expected = sanitizePayload({
        tool_name: "report.export",
        arguments: { month: "05" },
        result: full,
        has_error: false,
        executed: true,
      });
      expect(post[0]?.["result"]).toEqual(expected["result"]);
      expect(jsonBytes(post[0])).toBeLessThanOrEqual(SANITIZE_LIMITS.maxPayloadBytes);

      // Both legs are recorded: the provider's object, passed on to the caller as it was.
      const toolCallId = stack.seen.find((e) => e.event === "tool_result_offloaded")?.correlation
        .tool_call_id;
      expect(toolCallId).toBeTruthy();
      const events = await offloadedEvents(toolCallId ?? "");
      expect(events.map((e) => e.payload)).toEqual([
        {
          tool_name: "report.export",
          leg: "terminal",
          object: ref.$ref,
          bytes: ref.bytes,
          sha256: ref.sha256,
        },
        { tool_name: "report.export", leg: "reply", object: ref.$ref, bytes: ref.bytes, sha256: ref.sha256 },
      ]);

      // A replay runs nothing and returns the same whole result.
      const again = await cliCall(["report.export", "--key", "export-1", "--args", '{"month":"05"}']);
      expect(again.code).toBe(0);
      expect(again.reply).toMatchObject({ status: "replayed", has_error: false });
      expect(again.reply.result).toEqual(full);
      expect(calls).toBe(1);
      expect(post).toHaveLength(1);

      // The object is an ordinary Object Store object: the official client reads it.
      const os = await new Objm(env().nc).open(names.resultStore);
      const blob = await os.getBlob(ref.$ref);
      expect(JSON.parse(new TextDecoder().decode(blob ?? new Uint8Array()))).toEqual(full);
    } finally {
      await tool.close();
      await stack.stop();
    }
  });

  it("a large result the executor makes itself (a built-in) is written by the executor and read back by the client", async () => {
    const { nc, names } = env();
    const full = bigResult(2 * MiB, "builtin");
    const builtin = recordingTool("dump.state", "read", { run: () => ({ result: full, has_error: false }) });
    const stack = await startToolStack(env(), { tools: [builtin] });
    try {
      const reply = await createToolClient({ nc, names }).execute({
        tool_name: "dump.state",
        arguments: {},
        correlation: { session_id: "s-b", tool_call_id: "c-b" },
      });
      expect(reply).toMatchObject({ status: "completed", has_error: false });
      expect(reply.result).toEqual(full);
      const legs = stack.seen
        .filter((e) => e.event === "tool_result_offloaded" && e.correlation.tool_call_id === "c-b")
        .map((e) => e.payload["leg"]);
      expect(legs).toEqual(["reply"]);
    } finally {
      await stack.stop();
    }
  });

  it("a replay whose stored result has expired says so and runs nothing again", async () => {
    const { nc, names, jsm } = env();
    const full = bigResult(1 * MiB, "expiring");
    const tool = recordingTool("archive.write", "mutation", {
      run: () => ({ result: full, has_error: false }),
    });
    const stack = await startToolStack(env(), { tools: [tool] });
    try {
      const client = createToolClient({ nc, names });
      const call = { tool_name: "archive.write", arguments: {}, operation_key: "archive-1" };
      expect((await client.execute(call)).result).toEqual(full);
      const stored = await (await ReceiptStore.open({ nc, names })).get("archive-1");
      const ref = stored?.receipt.result as ResultRef;
      // What the bucket's TTL does to an old object: it is gone, meta and chunks.
      await jsm.streams.purge(names.resultStream);
      const replay = await client.execute(call);
      expect(replay.status).toBe("replayed");
      expect(replay.has_error).toBe(true);
      expect(replay.result).toEqual({ error: expect.stringContaining("no longer in"), result_ref: ref });
      expect(replay.reason).toContain(`${ref.$ref}) cannot be read`);
      expect(replay.reason).toContain("the operation is not run again");
      expect(tool.calls).toHaveLength(1);
      expect((await (await ReceiptStore.open({ nc, names })).get("archive-1"))?.receipt.state).toBe(
        "completed",
      );
    } finally {
      await stack.stop();
    }
  });

  it("a result over max_payload that is not offloaded is an error result at once, and the receipt completes", async () => {
    const { names } = env();
    const stack = await startToolStack(env());
    const maxPayload = env().nc.info?.max_payload ?? MiB;
    let calls = 0;
    // A provider that sends everything inline, as one that knows nothing of references would.
    const tool = await remoteTool(
      env(),
      { name: "mail.bulk", effect: "communication" },
      () => {
        calls++;
        return { result: bigResult(1_100 * 1024, "inline") };
      },
      { resultInlineBytes: 8 * MiB },
    );
    try {
      const started = performance.now();
      const reply = await createToolClient({ nc: env().nc, names }).execute(
        { tool_name: "mail.bulk", arguments: {}, operation_key: "bulk-1" },
        { timeoutMs: 120_000 },
      );
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(calls).toBe(1);
      expect(reply).toMatchObject({ status: "failed", has_error: true, executed: true });
      expect(reply.result["error"]).toContain(`exceeds the NATS max_payload of ${maxPayload} bytes`);
      expect(reply.receipt).toMatchObject({ key: "bulk-1", state: "completed" });
      const stored = await (await ReceiptStore.open({ nc: env().nc, names })).get("bulk-1");
      expect(stored?.receipt).toMatchObject({ state: "completed", has_error: true });
    } finally {
      await tool.close();
      await stack.stop();
    }
  });
});
