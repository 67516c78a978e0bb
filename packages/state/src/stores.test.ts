import { createHash } from "node:crypto";
import { ensureBucket } from "@geode/bus";
import {
  GeodeError,
  type HandlerRegistration,
  type SessionRecord,
  SessionRecordSchema,
} from "@geode/contracts";
import { useTestEnv, waitFor } from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { AgentStore } from "./agent-store.js";
import { AttemptStore } from "./attempt-store.js";
import { HandlerRegistrations } from "./handler-registrations.js";
import { KvRecords } from "./kv-records.js";
import { KeepRecord, mutateKvRecord } from "./mutate-kv-record.js";
import { ReceiptStore } from "./receipt-store.js";
import { RunStore } from "./run-store.js";
import { PAUSE_REASON, SessionStore } from "./session-store.js";
import { ToolStore } from "./tool-store.js";

const env = useTestEnv();
const conn = () => ({ nc: env().nc, names: env().names });
const codeOf = (err: unknown) => (err instanceof GeodeError ? err.code : String(err));
const sha = (token: string) => createHash("sha256").update(token).digest("hex");

describe("mutateKvRecord, the one compare-and-swap", () => {
  it("applies every one of many concurrent increments exactly once", async () => {
    const kv = await ensureBucket(env().nc, env().names, "runs");
    const parse = (raw: unknown) => raw as { n: number };
    await Promise.all(
      Array.from({ length: 20 }, () => mutateKvRecord(kv, "counter", parse, (c) => ({ n: (c?.n ?? 0) + 1 }))),
    );
    expect((await kv.get("counter"))?.json()).toEqual({ n: 20 });
  });

  it("writes nothing when the update keeps the record, and recreates a deleted key", async () => {
    const kv = await ensureBucket(env().nc, env().names, "runs");
    const parse = (raw: unknown) => raw as { v: string };
    await mutateKvRecord(kv, "k", parse, () => ({ v: "a" }));
    const kept = await mutateKvRecord(kv, "k", parse, () => {
      throw new KeepRecord();
    });
    expect(kept).toMatchObject({ written: false, value: { v: "a" } });
    await kv.delete("k");
    const again = await mutateKvRecord(kv, "k", parse, (c) => ({ v: c === null ? "fresh" : "stale" }));
    expect(again).toMatchObject({ written: true, value: { v: "fresh" } });
  });
});

describe("AgentStore (KV {ns}_agents, written by operators, read by the agent gateway)", () => {
  it("adds an agent once, finds it by its token's hash, lists and removes it", async () => {
    const agents = await AgentStore.open(conn());
    const added = await agents.add("claude-dev", sha("t0ken"));
    expect(added).toEqual({ name: "claude-dev", token_sha256: sha("t0ken"), created_at: expect.any(Number) });
    expect(codeOf(await agents.add("claude-dev", sha("other")).catch((e: unknown) => e))).toBe(
      "invalid_request",
    );
    expect(codeOf(await agents.add("Bad Name", sha("x")).catch((e: unknown) => e))).toBe("invalid_request");
    await agents.add("another", sha("second"));
    expect((await agents.list()).map((a) => a.name)).toEqual(["another", "claude-dev"]);
    expect(await agents.findByTokenSha256(sha("t0ken"))).toMatchObject({ name: "claude-dev" });
    expect(await agents.findByTokenSha256(sha("unknown"))).toBeNull();
    expect(await agents.get("claude-dev")).toEqual(added);
    expect(await agents.remove("claude-dev")).toBe(true);
    expect(await agents.remove("claude-dev")).toBe(false);
    expect(await agents.get("claude-dev")).toBeNull();
    // a removed name can be added again (a new token)
    await agents.add("claude-dev", sha("new"));
    expect(await agents.findByTokenSha256(sha("new"))).toMatchObject({ name: "claude-dev" });
  });

  it("a watch sees the agents there are, then additions and removals", async () => {
    const agents = await AgentStore.open(conn());
    await agents.add("watched-1", sha("w1"));
    const seen = new Map<string, string | null>();
    const watch = await agents.watch(({ key, value }) => seen.set(key, value?.token_sha256 ?? null));
    try {
      expect(seen.get("watched-1")).toBe(sha("w1"));
      await agents.add("watched-2", sha("w2"));
      await agents.remove("watched-1");
      await waitFor(() => seen.get("watched-2") === sha("w2") && seen.get("watched-1") === null);
    } finally {
      await watch.stop();
    }
  });
});

describe("KvRecords watch", () => {
  it("catches up by re-reading the bucket when its watch has lost its consumer", async () => {
    const records = await KvRecords.open(conn(), "runs", (raw) => raw as { n: number });
    await records.put("r1", { n: 1 });
    await records.put("r2", { n: 2 });
    const seen = new Map<string, number | null>();
    const watch = await records.watch(({ key, value }) => seen.set(key, value?.n ?? null), {
      resyncMs: 100,
    });
    try {
      expect(seen.get("r1")).toBe(1);
      // The watch's consumer goes away under it, as when the NATS node that held it is lost.
      const jsm = await jetstreamManager(env().nc);
      const stream = `KV_${env().names.buckets.runs}`;
      for await (const c of jsm.consumers.list(stream)) await jsm.consumers.delete(stream, c.name);
      await records.put("r1", { n: 10 });
      await records.delete("r2");
      await records.put("r3", { n: 3 });
      await waitFor(() => seen.get("r1") === 10 && seen.get("r2") === null && seen.get("r3") === 3, 3_000);
    } finally {
      await watch.stop();
    }
  });
});

describe("HandlerRegistrations (KV {ns}_hook_handlers)", () => {
  const reg = (over: Partial<HandlerRegistration> = {}): HandlerRegistration => ({
    hook: "PreToolUse",
    name: "guard",
    priority: 10,
    timeout_ms: 1_000,
    schema_version: "geode.public-hook.v2",
    failure_mode: "open",
    match: null,
    heartbeat_at: Date.now(),
    lease_ms: 60_000,
    ...over,
  });

  it("refreshes a replica's registration, refuses another configuration, replaces a dead open one", async () => {
    const registry = await HandlerRegistrations.open(conn());
    await registry.register(reg());
    await registry.register(reg({ heartbeat_at: Date.now() + 1 }));
    const clash = await registry.register(reg({ priority: 20 })).catch((e: unknown) => e);
    expect(codeOf(clash)).toBe("duplicate_handler");
    await registry.register(reg({ name: "dead", heartbeat_at: 0, lease_ms: 1 }));
    await registry.register(reg({ name: "dead", priority: 99 }));
    expect((await registry.list("PreToolUse")).map((r) => [r.name, r.priority]).sort()).toEqual([
      ["dead", 99],
      ["guard", 10],
    ]);
    // only the handler's own configuration is unregistered
    expect(await registry.unregister(reg({ priority: 20 }))).toBe(false);
    expect(await registry.unregister(reg())).toBe(true);
    expect(await registry.remove("PreToolUse", "dead")).toBe(true);
    expect(await registry.list()).toEqual([]);
  });
});

describe("SessionStore (KV {ns}_sessions)", () => {
  it("ends a session once, and the verifier's pause never revives an ended one", async () => {
    const sessions = await SessionStore.open(conn());
    const { record } = await sessions.start({ session_id: "s-end", model: "m", provider: "p" });
    expect(record).toMatchObject({ status: "active", generation: 0 });
    const [a, b] = await Promise.all([
      sessions.end("s-end", "completed", "done"),
      sessions.end("s-end", "error", "crash"),
    ]);
    expect([a.ended, b.ended].filter(Boolean)).toHaveLength(1);
    await sessions.pause({ session_id: "s-end", session_generation: 0 });
    expect((await sessions.get("s-end"))?.status).toMatch(/^(completed|error)$/);
  });

  it("pauses (creating the record) and unpauses only its own pause", async () => {
    const sessions = await SessionStore.open(conn());
    await sessions.pause({ session_id: "s-gate", session_generation: 3 });
    expect(await sessions.get("s-gate")).toMatchObject({
      status: "paused",
      reason: PAUSE_REASON,
      generation: 3,
    });
    await sessions.unpause("s-gate");
    expect(await sessions.get("s-gate")).toMatchObject({ status: "active", reason: "" });
    const kv = await ensureBucket(env().nc, env().names, "sessions");
    const other: SessionRecord = { ...(await sessions.get("s-gate"))!, status: "paused", reason: "user" };
    await kv.put(env().names.sessionKey("s-gate"), JSON.stringify(other));
    await sessions.unpause("s-gate");
    expect(SessionRecordSchema.parse((await kv.get(env().names.sessionKey("s-gate")))?.json()).reason).toBe(
      "user",
    );
  });
});

describe("RunStore and ReceiptStore", () => {
  it("opens and closes runs idempotently and refuses unsafe run ids", async () => {
    const runs = await RunStore.open(conn());
    const opened = await runs.open("run-1");
    expect(await runs.open("run-1")).toEqual(opened);
    expect((await runs.close("run-1")).status).toBe("closed");
    expect(codeOf(await runs.close("never").catch((e: unknown) => e))).toBe("invalid_request");
    expect(codeOf(await runs.open("../etc").catch((e: unknown) => e))).toBe("invalid_request");
  });

  it("admits an operation once and lets an operator resolve it only at the revision read", async () => {
    const receipts = await ReceiptStore.open(conn());
    const fields = { tool_name: "fs.write", arguments_sha256: "0".repeat(64), correlation: {} };
    const first = await receipts.admit("op 1", fields, Date.now() + 10_000);
    const second = await receipts.admit("op 1", fields, Date.now() + 10_000);
    expect([first.admitted, second.admitted]).toEqual([true, false]);
    const resolved = { ...first.receipt, state: "failed" as const };
    expect(await receipts.resolve(resolved, first.revision + 10)).toBeNull();
    expect(await receipts.resolve(resolved, first.revision)).toBeGreaterThan(first.revision);
    expect((await receipts.list("failed")).map((r) => r.key)).toEqual(["op 1"]);
  });
});

describe("AttemptStore.clearSession", () => {
  it("purges every root turn of one session and no other session's", async () => {
    const attempts = await AttemptStore.open(conn());
    const facts = {
      rounds: 1,
      tool_call_count: 0,
      usage: { input_tokens: 0, output_tokens: 0 },
      candidate_sha256: "",
    };
    await attempts.reserve("gone", "t1", facts);
    await attempts.reserve("gone", "t2", facts);
    await attempts.reserve("gone-too", "t1", facts);
    expect(await attempts.clearSession("gone")).toBe(2);
    expect(await attempts.get("gone", "t1")).toBeNull();
    expect(await attempts.get("gone-too", "t1")).not.toBeNull();
  });
});

describe("text from the wire in KV", () => {
  const SECRET = "sk-PLANTEDstore0123456789abcdef";

  it("is stored with its secrets masked: a receipt's result, a tool's description, a session's reason", async () => {
    const receipts = await ReceiptStore.open(conn());
    const admitted = await receipts.admit(
      "op-masked",
      { tool_name: "t", arguments_sha256: "x", correlation: { session_id: "s" } },
      Date.now() + 10_000,
    );
    await receipts.commit(
      {
        ...admitted.receipt,
        state: "completed",
        completed_at: Date.now(),
        result: { out: `the key is ${SECRET}`, password: "hunter2", n: 1, list: [SECRET] },
        has_error: false,
        status: "ok",
        additional_context: [`use ${SECRET}`],
      },
      admitted.revision,
    );
    const stored = (await receipts.get("op-masked"))?.receipt;
    expect(stored?.result).toEqual({
      out: "the key is [REDACTED]",
      password: "[REDACTED]",
      n: 1,
      list: ["[REDACTED]"],
    });
    expect(stored?.additional_context).toEqual(["use [REDACTED]"]);

    const tools = await ToolStore.open(conn());
    await tools.publish({
      name: "masked.tool",
      description: `call with ${SECRET}`,
      input_schema: { type: "object", properties: { password: { type: "string" } } },
      effect: "read",
      requires_approval: false,
    });
    const tool = await tools.get("masked.tool");
    expect(tool?.description).toBe("call with [REDACTED]");
    expect(tool?.input_schema).toEqual({ type: "object", properties: { password: { type: "string" } } });

    const sessions = await SessionStore.open(conn());
    await sessions.start({ session_id: "s-masked", model: `m ${SECRET}`, provider: "p" });
    await sessions.end("s-masked", "completed", `bye --token ${SECRET}`);
    const session = await sessions.get("s-masked");
    expect(session?.model).toBe("m [REDACTED]");
    expect(session?.reason).toBe("bye --token [REDACTED]");
  });
});
