import { createHash } from "node:crypto";
import { ensureResultStore } from "@geode/bus";
import { names as buildNames, type ResultRef } from "@geode/contracts";
import { startHookDispatcher } from "@geode/hook-dispatcher";
import { createToolClient } from "@geode/runtime";
import { serveTool } from "@geode/sdk";
import { ReceiptStore, ResultStore } from "@geode/state";
import { uniqueNamespace } from "@geode/testing";
import { startToolExecutor } from "@geode/tool-executor";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SecuredNats, startSecuredNats } from "./security-support.js";

// A nats-server with the generated per-role configuration: the executor, two tool providers and
// the runtime each connect as their own user.
const ns = uniqueNamespace("secres");
const n = buildNames(ns);
let secured: SecuredNats;
const stops: Array<() => Promise<void>> = [];
const as = (user: string) => secured.as(user, { reconnect: false });
const denied = /Permissions Violation for Publish/;

const bytes = (text: string) => new TextEncoder().encode(text);
const payload = (tag: string, size: number) =>
  bytes(JSON.stringify({ tag, text: tag.repeat(size / tag.length) }));

beforeAll(async () => {
  secured = await startSecuredNats({ namespace: ns, toolProviders: ["report.big", "forger"] });
  // The tool-executor provisions the bucket (its user may; providers may not).
  await ensureResultStore(await as("tool-executor"), n);
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await secured?.stop();
});

describe("a tool provider and the results bucket", () => {
  it("writes its own results, is refused another tool's chunks, and cannot read or inspect the bucket", async () => {
    const provider = await as("tool-report.big");
    const own = new ResultStore({ nc: provider, names: n });
    const data = payload("own", 300_000);
    const ref = await own.putBytes(data, { tool: "report.big" }, "report.big");
    expect(ref.bytes).toBe(data.byteLength);

    // The executor reads it back as report.big's.
    const executor = new ResultStore({ nc: await as("tool-executor"), names: n });
    expect(await executor.get(ref, { writer: { tool: "report.big" } })).toMatchObject({ tag: "own" });

    // Chunks under another tool's subjects are refused by the server.
    await expect(own.putBytes(payload("fake", 1_000), { tool: "forger" }, "forger")).rejects.toThrow(denied);
    await expect(own.putBytes(payload("fake", 1_000), "tool-executor", "report.big")).rejects.toThrow(denied);

    // No read right: neither the objects nor the stream's state (which could list object names).
    await expect(own.get(ref)).rejects.toThrow(denied);
    const jsm = await jetstreamManager(provider, { checkAPI: false });
    await expect(jsm.streams.info(n.resultStream, { subjects_filter: ">" })).rejects.toThrow(denied);
  });

  it("the executor refuses a reference that is not the tool's or whose digest does not match", async () => {
    const dispatcher = await startHookDispatcher({ nc: await as("hook-dispatcher"), names: n });
    stops.push(() => dispatcher.stop());
    const executor = await startToolExecutor({ nc: await as("tool-executor"), names: n, tools: [] });
    stops.push(() => executor.stop());
    const definition = (name: string) => ({
      name,
      description: "writes and reports",
      input_schema: { type: "object" },
      effect: "mutation" as const,
      requires_approval: false,
    });
    const full = { rows: Array.from({ length: 4_000 }, (_, i) => `row-${i}-${"r".repeat(200)}`) };
    const report = await serveTool(
      { nc: await as("tool-report.big"), names: n },
      definition("report.big"),
      () => ({
        result: full,
      }),
    );
    stops.push(() => report.close());

    // The forger answers with a reference it chooses: one to report.big's object, or one to its
    // own object with another digest. Small enough to travel inline, as any result would.
    const forgerConn = await as("tool-forger");
    const forgerStore = new ResultStore({ nc: forgerConn, names: n });
    let answer: ResultRef | undefined;
    let forgerCalls = 0;
    const forger = await serveTool({ nc: forgerConn, names: n }, definition("forger"), () => {
      forgerCalls++;
      return { result: answer ?? {} };
    });
    stops.push(() => forger.close());

    const client = createToolClient({ nc: await as("runtime"), names: n });
    const genuine = await client.execute({ tool_name: "report.big", arguments: {}, operation_key: "r-1" });
    expect(genuine).toMatchObject({ status: "completed", has_error: false, receipt: { state: "completed" } });
    expect(genuine.result).toEqual(full);

    // The name of report.big's object, as a forger that learnt it somehow would give it.
    const receipts = await ReceiptStore.open({ nc: await as("operator"), names: n }, { create: false });
    const reportRef = (await receipts.get("r-1"))?.receipt.result as ResultRef;
    expect(reportRef.$ref).toMatch(/^report\.big\//);
    answer = reportRef;
    const foreign = await client.execute({ tool_name: "forger", arguments: {}, operation_key: "f-1" });
    expect(foreign).toMatchObject({ status: "failed", has_error: true, executed: true });
    expect(foreign.result["error"]).toBe(
      `the result reference was refused: result ${reportRef.$ref} was not written by the provider of forger`,
    );
    expect(foreign.receipt?.state).toBe("completed");

    const ownData = payload("forged", 400_000);
    const ownRef = await forgerStore.putBytes(ownData, { tool: "forger" }, "forger");
    answer = { ...ownRef, sha256: createHash("sha256").update("something else").digest("hex") };
    const mismatch = await client.execute({ tool_name: "forger", arguments: {}, operation_key: "f-2" });
    expect(mismatch).toMatchObject({ status: "failed", has_error: true });
    expect(mismatch.result["error"]).toBe(
      `the result reference was refused: result ${ownRef.$ref} does not match its reference's size and sha256`,
    );
    answer = { ...ownRef, bytes: ownRef.bytes + 1 };
    const wrongSize = await client.execute({ tool_name: "forger", arguments: {}, operation_key: "f-3" });
    expect(wrongSize.result["error"]).toContain("does not match its reference's size and sha256");

    // Its own reference, as written, is accepted.
    answer = ownRef;
    const honest = await client.execute({ tool_name: "forger", arguments: {}, operation_key: "f-4" });
    expect(honest).toMatchObject({ status: "completed", has_error: false });
    expect(honest.result).toMatchObject({ tag: "forged" });
    expect(forgerCalls).toBe(4);
  });
});
