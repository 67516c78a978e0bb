import { decodeJson, encodeJson, ensureBucket } from "@geode/bus";
import { type EventEnvelope, HookName, type ToolExecuteReply } from "@geode/contracts";
import { createToolClient } from "@geode/runtime";
import { serveApprovals } from "@geode/sdk";
import { useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RecordingTool, recordingTool, startToolStack, type ToolStack } from "./tools-support.js";

const env = useTestEnv();
let stack: ToolStack;
const tools: Record<string, RecordingTool> = {};
const pathSchema = {
  type: "object",
  properties: { path: { type: "string" } },
  required: ["path"],
  additionalProperties: false,
};

function tool(t: RecordingTool): RecordingTool {
  tools[t.definition.name] = t;
  return t;
}
tool(recordingTool("order.write", "mutation", { requires_approval: true }));
tool(recordingTool("rw.read", "read", { input_schema: pathSchema }));
tool(recordingTool("perm.read", "read"));
tool(
  recordingTool("secret.read", "read", {
    input_schema: {
      type: "object",
      properties: { path: { type: "string" }, api_key: { type: "string" } },
      additionalProperties: false,
    },
  }),
);
tool(recordingTool("ask.write", "mutation", { requires_approval: true }));
tool(recordingTool("human.write", "mutation", { requires_approval: true }));
tool(recordingTool("mw.write", "mutation"));
tool(recordingTool("post.write", "mutation"));
tool(
  recordingTool("post.throw", "mutation", {
    run: () => {
      throw new Error("disk on fire");
    },
  }),
);
tool(recordingTool("plain.read", "read"));
tool(recordingTool("danger.rm", "admin"));

beforeAll(async () => {
  stack = await startToolStack(env(), {
    tools: Object.values(tools),
    config: { deny: ["danger.*"] },
  });
});
afterAll(async () => {
  await stack?.stop();
});

const client = () => createToolClient({ nc: env().nc, names: env().names });
const call = (
  tool_name: string,
  args: Record<string, unknown>,
  id: string,
  extra: { operation_key?: string } = {},
) =>
  client().execute({
    tool_name,
    arguments: args,
    correlation: { session_id: "s1", turn_id: "t1", tool_call_id: id },
    ...extra,
  });
const eventsOf = (id: string, event: string): EventEnvelope[] =>
  stack.seen.filter((e) => e.event === event && e.correlation.tool_call_id === id);

describe("tool boundary order", () => {
  it("runs policy, middleware, hooks, approval, admission, terminal, events, PostToolUse and the receipt commit in the boundary's order (docs/architecture.md)", async () => {
    const seq: string[] = [];
    const receipts = await ensureBucket(env().nc, env().names, "toolReceipts");
    const offEvents = stack.events.subscribe((e) => {
      if (e.correlation.tool_call_id === "order-1" && e.event.startsWith("tool_exec")) seq.push(e.event);
    });
    const offTimeline = stack.events.subscribeTimeline((r) => {
      if (r.correlation.tool_call_id === "order-1") seq.push(r.kind);
    });
    const offReq = stack.middleware.registerToolRequest({ name: "order-req" }, (req) => {
      seq.push("tool_request");
      return req;
    });
    const offExec = stack.middleware.registerToolExecution({ name: "order-exec" }, async (_req, next) => {
      seq.push("tool_execution>");
      const r = await next();
      seq.push("<tool_execution");
      return r;
    });
    const t = tools["order.write"]!;
    const originalRun = t.run;
    t.run = async (args, ctx) => {
      const receipt = await receipts.get("order-key");
      seq.push(
        `terminal (receipt ${receipt ? (decodeJson(receipt.value) as { state: string }).state : "missing"})`,
      );
      return originalRun(args, ctx);
    };
    const match = { tool_name: ["order.*"] };
    await stack.hook(HookName.PreToolUse, { name: "order-pre", match }, () => {
      seq.push("PreToolUse");
      return null;
    });
    await stack.hook(HookName.PermissionRequest, { name: "order-perm", match }, () => {
      seq.push("PermissionRequest");
      return { action: "allow" };
    });
    await stack.hook(HookName.PostToolUse, { name: "order-post", match }, () => {
      seq.push("PostToolUse");
      return { action: "add_context", reason: "wrote the order" };
    });
    try {
      const reply = await call("order.write", { id: 7 }, "order-1", { operation_key: "order-key" });
      expect(reply).toMatchObject({
        status: "completed",
        executed: true,
        has_error: false,
        additional_context: ["wrote the order"],
        receipt: { key: "order-key", state: "completed" },
      });
      const stored = decodeJson((await receipts.get("order-key"))!.value) as {
        state: string;
        status: string;
      };
      expect(stored).toMatchObject({ state: "completed", status: "completed" });
      expect(seq).toEqual([
        "tool_request",
        "PreToolUse",
        "PermissionRequest",
        "tool.called",
        "tool_execution>",
        "tool_exec_started",
        "terminal (receipt admitted)",
        "tool_exec_ended",
        "<tool_execution",
        "PostToolUse",
        "tool.completed",
      ]);
      const surfaces = eventsOf("order-1", "extension_invoked").map((e) => [
        e.payload["surface"],
        e.payload["status"],
      ]);
      expect(surfaces).toEqual([
        ["tool_request", "ok"],
        ["tool_execution", "called_next"],
      ]);
    } finally {
      offEvents();
      offTimeline();
      offReq();
      offExec();
      t.run = originalRun;
    }
  });
});

describe("PreToolUse", () => {
  it("a rewrite the dispatcher refuses is a handler error and the original arguments run", async () => {
    const h = await stack.hook(
      HookName.PreToolUse,
      { name: "bad-rewrite", match: { tool_name: ["rw.*"] } },
      () => ({
        action: "rewrite",
        updates: { arguments: "not an object" },
      }),
    );
    const audits: EventEnvelope[] = [];
    const sub = env().nc.subscribe(env().names.event("extension_invoked"), {
      callback: (_err, m) => {
        audits.push(decodeJson(m.data) as EventEnvelope);
      },
    });
    try {
      const reply = await call("rw.read", { path: "notes.txt" }, "rw-1");
      expect(reply.status).toBe("completed");
      expect(tools["rw.read"]!.calls.at(-1)).toEqual({ path: "notes.txt" });
      const audit = await waitFor(() => audits.find((a) => a.payload["extension"] === "bad-rewrite"));
      expect(audit?.payload).toMatchObject({ surface: "hook", name: "PreToolUse", status: "error" });
    } finally {
      sub.unsubscribe();
      await h.close();
    }
  });

  it("a valid rewrite is revalidated against the tool's schema: accepted it runs, refused nothing runs", async () => {
    const calls = tools["rw.read"]!.calls;
    let updates: Record<string, unknown> = { arguments: { path: "safe.txt" } };
    const h = await stack.hook(
      HookName.PreToolUse,
      { name: "rewriter", match: { tool_name: ["rw.*"] } },
      () => ({
        action: "rewrite",
        updates,
      }),
    );
    try {
      await expect(call("rw.read", { path: "secret.txt" }, "rw-2")).resolves.toMatchObject({
        status: "completed",
      });
      expect(calls.at(-1)).toEqual({ path: "safe.txt" });
      const before = calls.length;
      updates = { arguments: { path: 42 } };
      await expect(call("rw.read", { path: "secret.txt" }, "rw-3")).rejects.toMatchObject({
        code: "schema_invalid",
      });
      updates = { tool_name: "danger.rm", arguments: { path: "/" } };
      await expect(call("rw.read", { path: "secret.txt" }, "rw-4")).resolves.toMatchObject({
        status: "denied",
      });
      expect(calls.length).toBe(before);
      expect(tools["danger.rm"]!.calls).toEqual([]);
    } finally {
      await h.close();
    }
  });

  it("a rewrite keeps the secret arguments the handler never saw", async () => {
    const handlerSaw: unknown[] = [];
    const h = await stack.hook(
      HookName.PreToolUse,
      { name: "path-fixer", match: { tool_name: ["secret.*"] } },
      (e) => {
        handlerSaw.push(e.payload["arguments"]);
        return {
          action: "rewrite",
          updates: {
            arguments: { ...(e.payload["arguments"] as Record<string, unknown>), path: "fixed.txt" },
          },
        };
      },
    );
    try {
      const reply = await call("secret.read", { path: "x.txt", api_key: "k-live-123" }, "sec-1");
      expect(reply.status).toBe("completed");
      expect(handlerSaw).toEqual([{ path: "x.txt", _redacted_fields: ["api_key"] }]);
      expect(tools["secret.read"]!.calls).toEqual([{ path: "fixed.txt", api_key: "k-live-123" }]);
    } finally {
      await h.close();
    }
  });

  it("request_permission leads to PermissionRequest, whose allow proceeds and deny denies", async () => {
    const match = { tool_name: ["perm.*"] };
    const permissionSaw: Array<Record<string, unknown>> = [];
    let answer: "allow" | "deny" = "allow";
    await stack.hook(HookName.PreToolUse, { name: "perm-pre", match }, () => ({
      action: "request_permission",
      reason: "reads customer data",
    }));
    await stack.hook(HookName.PermissionRequest, { name: "perm-guard", match }, (envelope) => {
      permissionSaw.push(envelope.payload);
      return { action: answer, reason: `policy says ${answer}` };
    });
    await expect(call("perm.read", { q: 1 }, "perm-1")).resolves.toMatchObject({ status: "completed" });
    answer = "deny";
    const denied = await call("perm.read", { q: 2 }, "perm-2");
    expect(denied).toMatchObject({ status: "denied", executed: false });
    expect(denied.reason).toContain("policy says deny");
    expect(permissionSaw).toHaveLength(2);
    expect(permissionSaw[0]).toMatchObject({ tool_name: "perm.read", safety_level: "read" });
    expect(tools["perm.read"]!.calls).toEqual([{ q: 1 }]);
  });
});

describe("approval", () => {
  it("ask with no approver listening denies at once", async () => {
    await stack.hook(HookName.PermissionRequest, { name: "asker", match: { tool_name: ["ask.*"] } }, () => ({
      action: "ask",
    }));
    const reply = await call("ask.write", {}, "ask-1");
    expect(reply).toMatchObject({ status: "denied", executed: false, receipt: null });
    expect(reply.reason).toContain("no approver");
    expect(tools["ask.write"]!.calls).toEqual([]);
  });

  it("an approver's allow proceeds; its deny denies", async () => {
    const requests: Array<Record<string, unknown>> = [];
    let decision: "allow" | "deny" = "allow";
    const approvals = serveApprovals(
      { nc: env().nc, names: env().names },
      (req) => {
        requests.push(req);
        return { decision, reason: "checked by hand" };
      },
      { approver: "alice" },
    );
    try {
      await expect(call("human.write", { n: 1 }, "human-1")).resolves.toMatchObject({ status: "completed" });
      decision = "deny";
      const denied = await call("human.write", { n: 2 }, "human-2");
      expect(denied.status).toBe("denied");
      expect(denied.reason).toContain("alice");
      expect(requests[0]).toMatchObject({ tool_name: "human.write", safety_level: "mutation" });
      expect(typeof requests[0]!["approval_id"]).toBe("string");
      expect(tools["human.write"]!.calls).toEqual([{ n: 1 }]);
      expect(eventsOf("human-1", "approval_transition")[0]?.payload).toMatchObject({
        decision: "allow",
        approver: "alice",
      });
    } finally {
      await approvals.close();
    }
  });
});

describe("tool_execution middleware", () => {
  it("a short-circuit returns the wrapper's result and emits no tool_exec_started", async () => {
    const off = stack.middleware.registerToolExecution({ name: "cache" }, async (req) =>
      req.tool_name === "mw.write"
        ? { result: { cached: true }, has_error: false }
        : { result: {}, has_error: true },
    );
    try {
      const reply = await call("mw.write", {}, "sc-1");
      expect(reply).toMatchObject({ status: "completed", executed: false, result: { cached: true } });
      expect(tools["mw.write"]!.calls).toEqual([]);
      expect(eventsOf("sc-1", "tool_exec_started")).toEqual([]);
      expect(eventsOf("sc-1", "extension_invoked").map((e) => e.payload["status"])).toEqual([
        "short_circuit",
      ]);
    } finally {
      off();
    }
  });

  it("next called twice throws inside the wrapper and the terminal runs once", async () => {
    let second: unknown;
    const off = stack.middleware.registerToolExecution({ name: "double" }, async (_req, next) => {
      const first = await next();
      second = await next().catch((e: unknown) => e);
      return first;
    });
    try {
      const before = tools["mw.write"]!.calls.length;
      const reply = await call("mw.write", { n: 1 }, "twice-1");
      expect(reply.status).toBe("completed");
      expect(tools["mw.write"]!.calls.length).toBe(before + 1);
      expect(second).toMatchObject({ code: "next_called_twice" });
      expect(eventsOf("twice-1", "tool_exec_started")).toHaveLength(1);
    } finally {
      off();
    }
  });

  it("a wrapper that throws after next keeps the completed result", async () => {
    const off = stack.middleware.registerToolExecution({ name: "throws-after" }, async (_req, next) => {
      await next();
      throw new Error("exporter down");
    });
    try {
      const before = tools["mw.write"]!.calls.length;
      const reply = await call("mw.write", { n: 2 }, "after-1");
      expect(reply).toMatchObject({ status: "completed", has_error: false, executed: true });
      expect(reply.result).toMatchObject({ ok: true });
      expect(tools["mw.write"]!.calls.length).toBe(before + 1);
      expect(reply.receipt?.state).toBe("completed");
    } finally {
      off();
    }
  });
});

describe("PostToolUse and receipts", () => {
  it("does not run on replay, on admission denial or on a thrown terminal", async () => {
    const postSaw: string[] = [];
    await stack.hook(
      HookName.PostToolUse,
      { name: "post-rec", match: { tool_name: ["post.*", "danger.*"] } },
      (e) => {
        postSaw.push(`${e.payload["tool_name"]}:${e.correlation.tool_call_id}`);
        return null;
      },
    );
    const first = await call("post.write", { v: 1 }, "post-1");
    expect(first).toMatchObject({ status: "completed", receipt: { key: "s1.post-1", state: "completed" } });
    const again = await call("post.write", { v: 1 }, "post-1");
    expect(again).toMatchObject({
      status: "replayed",
      executed: false,
      result: first.result,
      receipt: { state: "completed" },
    });
    expect(tools["post.write"]!.calls).toHaveLength(1);

    const denied = await call("danger.rm", { path: "/" }, "post-2");
    expect(denied.status).toBe("denied");

    const thrown = await call("post.throw", {}, "post-3");
    expect(thrown).toMatchObject({ status: "failed", has_error: true, executed: true });
    expect(thrown.reason).toContain("disk on fire");
    expect(eventsOf("post-3", "tool_exec_failed")[0]?.payload["ended_event_id"]).toBe(
      eventsOf("post-3", "tool_exec_ended")[0]?.id,
    );

    expect(postSaw).toEqual(["post.write:post-1"]);
  });

  it("a read-only tool needs no receipt", async () => {
    const reply = await call("plain.read", {}, "read-1");
    expect(reply).toMatchObject({ status: "completed", receipt: null });
    const receipts = await ensureBucket(env().nc, env().names, "toolReceipts");
    expect(await receipts.get("s1.read-1")).toBeNull();
  });

  it("a policy deny is final: no hook runs and no hook can allow it", async () => {
    const reply = await call("danger.rm", {}, "deny-1");
    expect(reply).toMatchObject({ status: "denied", executed: false, receipt: null });
    expect(reply.reason).toContain("deny list");
    expect(tools["danger.rm"]!.calls).toEqual([]);
  });
});

describe("bad input from the wire", () => {
  it("gets an error reply with a wire error code and the executor keeps serving", async () => {
    const { nc, names } = env();
    const raw = async (data: Uint8Array) =>
      decodeJson((await nc.request(names.toolExecute, data, { timeout: 5_000 })).data);
    const code = (body: unknown) => (body as { error?: { code: string } }).error?.code;
    expect(code(await raw(new TextEncoder().encode("{not json")))).toBe("invalid_request");
    expect(code(await raw(encodeJson({ arguments: {} })))).toBe("invalid_request");
    expect(code(await raw(encodeJson({ tool_name: "echo", arguments: {}, surprise: 1 })))).toBe(
      "invalid_request",
    );
    expect(code(await raw(encodeJson({ tool_name: "echo", arguments: {}, correlation: { nope: 1 } })))).toBe(
      "invalid_request",
    );
    expect(code(await raw(encodeJson({ tool_name: "no.such.tool", arguments: {} })))).toBe("unknown_tool");
    expect(code(await raw(encodeJson({ tool_name: "rw.read", arguments: { path: 1 } })))).toBe(
      "schema_invalid",
    );
    expect(code(await raw(encodeJson({ tool_name: "post.write", arguments: {} })))).toBe("invalid_request");
    const ok = (await raw(encodeJson({ tool_name: "echo", arguments: { hi: "there" } }))) as ToolExecuteReply;
    expect(ok).toMatchObject({ status: "completed", result: { hi: "there" } });
  });

  it("fails closed with unavailable when the hook-dispatcher is down", async () => {
    await stack.dispatcher.stop();
    await expect(call("plain.read", {}, "down-1")).rejects.toMatchObject({ code: "unavailable" });
    expect(tools["plain.read"]!.calls).toHaveLength(1);
  });
});
