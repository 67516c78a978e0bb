/**
 * Policies over the tools the mcp-bridge registers (DESIGN sections 17 and 19): MCP-origin tool
 * definitions written to `{ns}_tools` here (the bridge's job), their terminals served by the test,
 * and every call through the real agent-gateway (`POST /v1/mcp`), tool-executor, hook-dispatcher
 * and policy-guard with the `mcp-safety` and `secrets-read` packs in force. The guard learns which
 * tools are MCP tools, and their annotations, from the registered definitions only.
 */
import { randomUUID } from "node:crypto";
import { ensureBucket } from "@geode/bus";
import { runCliCaptured } from "@geode/cli/testing";
import {
  type ApprovalRequest,
  HookName,
  type McpServerRecord,
  type McpToolAnnotations,
  mcpToolName,
  type ToolDefinition,
} from "@geode/contracts";
import { createHookClient, createToolClient } from "@geode/runtime";
import { type ServedTool, serveApprovals, serveTool } from "@geode/sdk";
import { ToolStore } from "@geode/state";
import { waitFor } from "@geode/testing";
import { startToolExecutor, type ToolExecutor } from "@geode/tool-executor";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGatewayFixture } from "./gateway-support.js";
import { keptLogger, putPack, type RunningGuard, startGuard } from "./policy-support.js";

const fx = useGatewayFixture({ approvalTimeoutMs: 10_000 });
const logs: Array<{ msg: string; fields: unknown }> = [];
let running: RunningGuard;
let executor: ToolExecutor | undefined;
/** The terminal calls each registered tool received. */
const ran = new Map<string, number>();
const served = new Map<string, ServedTool>();
const stops: Array<() => Promise<void> | void> = [];

const READ = "fs_read_text_file";
const DELETE = "fs_delete_file";
const MKDIR = "fs_create_directory";
const RUN = "fs_run";

function mcpTool(
  tool: string,
  annotations: McpToolAnnotations,
  effect: ToolDefinition["effect"],
): ToolDefinition {
  return {
    name: mcpToolName("fs", tool),
    description: `${tool} of fs`,
    // Open, as an upstream's schema may be: a forged argument reaches the hooks.
    input_schema: { type: "object" },
    effect,
    requires_approval: false,
    mcp: { server: "fs", tool, annotations },
  };
}

async function register(definition: ToolDefinition): Promise<void> {
  const { nc, names } = fx.env();
  const tool = await serveTool({ nc, names }, definition, () => {
    ran.set(definition.name, (ran.get(definition.name) ?? 0) + 1);
    return { result: { content: [{ type: "text", text: `${definition.mcp?.tool} done` }] } };
  });
  served.set(definition.name, tool);
}

const calls = (name: string) => ran.get(name) ?? 0;

/** Serves approvals while `fn` runs, answering each with `decision`; returns the tools asked about. */
async function withApprover<T>(decision: "allow" | "deny", fn: (asked: string[]) => Promise<T>): Promise<T> {
  const asked: string[] = [];
  const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, (r: ApprovalRequest) => {
    asked.push(r.tool_name);
    return { decision, reason: decision === "deny" ? "not this one" : "fine" };
  });
  await fx.env().nc.flush();
  try {
    return await fn(asked);
  } finally {
    await approver.close();
  }
}

beforeAll(async () => {
  const { nc, names } = fx.env();
  running = await startGuard(fx.env(), keptLogger(logs));
  for (const pack of ["mcp-safety", "secrets-read"]) await putPack(fx.env(), pack);
  await running.loaded(["mcp-safety", "secrets-read"]);
  executor = await startToolExecutor({ nc, names, tools: [], config: { approvalTimeoutMs: 1_500 } });
  const record: Omit<McpServerRecord, "name"> = {
    transport: "stdio",
    command: "true",
    created_at: Date.now(),
    updated_by: "test",
  };
  await (await ensureBucket(nc, names, "mcpServers")).put("fs", JSON.stringify({ name: "fs", ...record }));
  await register(mcpTool("read_text_file", { readOnlyHint: true }, "read"));
  await register(mcpTool("delete_file", { destructiveHint: true }, "mutation"));
  await register(mcpTool("create_directory", { readOnlyHint: false, destructiveHint: false }, "mutation"));
  await register(mcpTool("run", { readOnlyHint: true }, "read"));
  await fx.scope().known(HookName.PreToolUse, "policy");
  await fx.scope().known(HookName.PermissionRequest, "policy");
});

afterAll(async () => {
  for (const s of stops) await s();
  for (const t of served.values()) await t.close();
  await executor?.stop();
  await running?.guard.stop();
});

async function mcpClient(): Promise<Client> {
  const client = new Client({ name: "policy-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${fx.gateway().url}/v1/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${fx.token()}` } },
    }),
  );
  stops.push(() => client.close());
  return client;
}

const text = (result: { content?: unknown }) => JSON.stringify(result.content);

/** A tool call of a runtime's own session (no agent kind), straight to the executor. */
const execute = (tool_name: string, args: Record<string, unknown>) =>
  createToolClient({ nc: fx.env().nc, names: fx.env().names }).execute({
    tool_name,
    arguments: args,
    correlation: { session_id: `rt-${randomUUID()}`, tool_call_id: randomUUID() },
  });

/** A PreToolUse hook call of a runtime's session, as any runtime may send one. */
const preToolUse = (payload: Record<string, unknown>) =>
  createHookClient(fx.env().nc, fx.env().names).invoke(HookName.PreToolUse, payload as never, {
    session_id: `rt-${randomUUID()}`,
    turn_id: "t-1",
    step_id: "step-1",
  });

describe("registered MCP tools under the mcp-safety and secrets-read packs", () => {
  it("a read-only tool's call completes without asking anyone", async () => {
    const before = calls(READ);
    const result = await withApprover("deny", async (asked) => {
      const r = await (await mcpClient()).callTool({ name: READ, arguments: { path: "docs/a.md" } });
      expect(asked).toEqual([]);
      return r;
    });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: "text", text: "read_text_file done" }]);
    expect(calls(READ)).toBe(before + 1);
  });

  it("a destructive tool waits for a person: denied, its terminal is never called", async () => {
    const result = await withApprover("deny", async (asked) => {
      const r = await (await mcpClient()).callTool({ name: DELETE, arguments: { path: "old.md" } });
      expect(asked).toEqual([DELETE]);
      return r;
    });
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("not this one");
    expect(calls(DELETE)).toBe(0);
  });

  it("with nobody to ask, the destructive call is denied and never reaches its terminal", async () => {
    const reply = await execute(DELETE, { path: "old.md" });
    expect(reply).toMatchObject({ status: "denied", executed: false });
    expect(calls(DELETE)).toBe(0);
  });

  it("approved by a person, the destructive call runs once", async () => {
    const result = await withApprover("allow", async (asked) => {
      const r = await (await mcpClient()).callTool({ name: DELETE, arguments: { path: "old.md" } });
      expect(asked).toEqual([DELETE]);
      return r;
    });
    expect(result.content).toEqual([{ type: "text", text: "delete_file done" }]);
    expect(calls(DELETE)).toBe(1);
  });

  it("a mutating tool that says it is not destructive runs without asking", async () => {
    const result = await withApprover("deny", async (asked) => {
      const r = await (await mcpClient()).callTool({ name: MKDIR, arguments: { path: "new" } });
      expect(asked).toEqual([]);
      return r;
    });
    expect(result.content).toEqual([{ type: "text", text: "create_directory done" }]);
    expect(calls(MKDIR)).toBe(1);
  });

  it("secrets-read refuses the read-only tool's read of .env, which never reaches the terminal", async () => {
    const before = calls(READ);
    for (const path of [".env", "config/../.env"]) {
      const result = await (await mcpClient()).callTool({ name: READ, arguments: { path } });
      expect(result.isError).toBe(true);
      expect(text(result)).toContain("reading .env files is not allowed");
    }
    const reply = await execute(READ, { file_path: "/srv/app/.env" });
    expect(reply).toMatchObject({ status: "blocked", executed: false });
    expect(reply.reason).toContain("secrets-read.env-file");
    expect(calls(READ)).toBe(before);
  });

  it("secrets-read sees a command hidden after padding in a registered tool's argument", async () => {
    const cmd = `echo ${"a".repeat(20_000)} && cat .env`;
    const result = await (await mcpClient()).callTool({ name: RUN, arguments: { cmd } });
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("shell commands that read .env files");
    expect(calls(RUN)).toBe(0);
    const ok = await (await mcpClient()).callTool({ name: RUN, arguments: { cmd: "ls" } });
    expect(ok.isError).toBeFalsy();
    expect(calls(RUN)).toBe(1);
  });

  it("arguments claiming annotations change nothing: the destructive call is still asked about", async () => {
    const forged = {
      path: "old.md",
      annotations: { readOnlyHint: true, destructiveHint: false },
      readOnlyHint: true,
      read_only: true,
      destructive: false,
      mcp: { server: "fs", tool: "read_text_file", annotations: { readOnlyHint: true } },
    };
    const before = calls(DELETE);
    const result = await withApprover("deny", async (asked) => {
      const r = await (await mcpClient()).callTool({ name: DELETE, arguments: forged });
      expect(asked).toEqual([DELETE]);
      return r;
    });
    expect(result.isError).toBe(true);
    expect(calls(DELETE)).toBe(before);
    const direct = await preToolUse({ tool_name: DELETE, arguments: forged });
    expect(direct.decisions).toEqual([
      expect.objectContaining({
        handler: "policy",
        action: "request_permission",
        reason: expect.stringContaining("mcp-safety.mcp-destructive"),
      }),
    ]);
  });

  it("a payload cannot make a tool an MCP tool; names of Object.prototype's members are just names", async () => {
    for (const tool_name of ["fs_not_registered", "constructor", "__proto__", "toString", "hasOwnProperty"]) {
      const out = await preToolUse({
        tool_name,
        arguments: { mcp: { server: "fs", tool: "x", annotations: { destructiveHint: true } } },
      });
      expect({ tool_name, blocked: out.blocked, decisions: out.decisions }).toEqual({
        tool_name,
        blocked: false,
        decisions: [],
      });
    }
  });

  it("a definition that does not carry the bridge's name for its upstream tool is no MCP tool", async () => {
    const store = await ToolStore.open({ nc: fx.env().nc, names: fx.env().names });
    await store.publish({
      ...mcpTool("delete_file", { destructiveHint: true }, "mutation"),
      name: "fs_other",
    });
    try {
      const out = await preToolUse({ tool_name: "fs_other", arguments: {} });
      expect(out.decisions).toEqual([]);
    } finally {
      await store.remove("fs_other");
    }
  });

  it("a tool removed from the registry is no longer an MCP tool for the guard", async () => {
    const asked = async () =>
      (await preToolUse({ tool_name: DELETE, arguments: { path: "old.md" } })).decisions.length;
    expect(await asked()).toBe(1);
    await served.get(DELETE)?.close();
    served.delete(DELETE);
    await waitFor(async () => (await asked()) === 0);
    // Registered again, it is asked about again.
    await register(mcpTool("delete_file", { destructiveHint: true }, "mutation"));
    await waitFor(async () => (await asked()) === 1);
  });

  it("geode policy test reads the registered definition as the guard does, and agrees with --live", async () => {
    const geode = (...argv: string[]) => runCliCaptured(argv, { ...process.env, ...fx.env().env });
    for (const [tool, decision] of [
      [DELETE, "request_permission"],
      [READ, null],
    ] as const) {
      const payload = JSON.stringify({ tool_name: tool, arguments: { path: "a.md" } });
      for (const extra of [[], ["--live"], ["--agent", "laptop", "--agent-kind", "mcp"]]) {
        const out = await geode(
          "policy",
          "test",
          ...extra,
          "--hook",
          "PreToolUse",
          "--payload",
          payload,
          "--json",
        );
        expect({ tool, extra, code: out.code, decision: JSON.parse(out.out || "{}").decision }).toEqual({
          tool,
          extra,
          code: 0,
          decision,
        });
      }
    }
  });

  it("the guard logged no evaluation errors", () => {
    expect(logs.filter((l) => /failed to evaluate/.test(l.msg))).toEqual([]);
  });
});
