/**
 * Every name that selects something on the wire, given each `Object.prototype` property name
 * (`constructor`, `__proto__`, `toString`, …): each gets the documented answer for an unknown name
 * (or, where the name is a valid one, works like any other), never an internal object, never a
 * crash, and every service keeps serving.
 */
import { randomUUID } from "node:crypto";
import { requestJson } from "@geode/bus";
import { runCliCaptured } from "@geode/cli/testing";
import {
  CLAUDE_CODE_HOOK_PATH,
  CODEX_HOOK_PATH,
  COPILOT_HOOK_PATH,
  GEMINI_CLI_HOOK_PATH,
  HookName,
  OPENCODE_HOOK_PATH,
  QWEN_CODE_HOOK_PATH,
} from "@geode/contracts";
import { serveHook } from "@geode/sdk";
import { useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_TOKEN, type ConsolePlane, startConsolePlane } from "./console-support.js";
import { addAgent, ccInput } from "./gateway-support.js";
import { eventsOf } from "./verify-support.js";

const PROTO_NAMES = Object.getOwnPropertyNames(Object.prototype);
const env = useTestEnv();
let plane: ConsolePlane;
let token = "";

beforeAll(async () => {
  plane = await startConsolePlane(env());
  // A valid agent name that is also an Object.prototype name: a name like any other.
  token = await addAgent(env(), "constructor");
  await waitFor(() => plane.gateway.agents() === 2);
}, 60_000);

afterAll(async () => {
  await plane?.stop();
});

async function post(path: string, body: unknown, query = "", bearer = token) {
  const res = await fetch(`${plane.gateway.url}${path}${query}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as unknown };
}

/** Each agent endpoint's input of event `event` (Copilot's event named in the URL). */
const endpoints: Array<{
  agent: string;
  event: (name: string, fields?: Record<string, unknown>) => [string, unknown, string];
}> = [
  { agent: "claude-code", event: (n, f) => [CLAUDE_CODE_HOOK_PATH, ccInput(n, f), ""] },
  {
    agent: "codex",
    event: (n, f) => [
      CODEX_HOOK_PATH,
      { session_id: randomUUID(), turn_id: randomUUID(), model: "gpt-5", hook_event_name: n, ...f },
      "",
    ],
  },
  {
    agent: "gemini-cli",
    event: (n, f) => [GEMINI_CLI_HOOK_PATH, { session_id: randomUUID(), hook_event_name: n, ...f }, ""],
  },
  {
    agent: "copilot (?event=)",
    event: (n, f) => [
      COPILOT_HOOK_PATH,
      { sessionId: randomUUID(), ...f },
      `?event=${encodeURIComponent(n)}`,
    ],
  },
  {
    agent: "copilot (hookName)",
    event: (n, f) => [COPILOT_HOOK_PATH, { sessionId: randomUUID(), hookName: n, ...f }, ""],
  },
  {
    agent: "qwen-code",
    event: (n, f) => [QWEN_CODE_HOOK_PATH, { session_id: randomUUID(), hook_event_name: n, ...f }, ""],
  },
  {
    agent: "opencode",
    event: (n, f) => [OPENCODE_HOOK_PATH, { session_id: `ses_${randomUUID()}`, event: n, ...f }, ""],
  },
];

describe("Object.prototype names on the wire", () => {
  it("an agent event of each name is recorded as a runtime event only and answered {}", async () => {
    const wrong: string[] = [];
    for (const e of endpoints)
      for (const name of PROTO_NAMES) {
        const [path, body, query] = e.event(name);
        const r = await post(path, body, query);
        if (r.status !== 200 || JSON.stringify(r.body) !== "{}")
          wrong.push(`${e.agent} ${name}: ${r.status} ${JSON.stringify(r.body).slice(0, 120)}`);
      }
    expect(wrong).toEqual([]);
    // Each is on the stream as what it is: an agent event with no hook.
    await waitFor(async () => {
      const recorded = (await eventsOf(env().jsm, env().names.eventsStream))
        .filter((e) => e.event === "adapter_dispatch_attempt")
        .map((e) => `${String(e.payload["adapter"])} ${String(e.payload["hook_event_name"])}`);
      return ["claude-code", "codex", "gemini-cli", "copilot", "qwen-code", "opencode"].every((a) =>
        PROTO_NAMES.every((n) => recorded.includes(`${a} ${n}`)),
      );
    });
  }, 120_000);

  it("a tool call of each name goes to the guards under its own name on every agent endpoint", async () => {
    const seen: string[] = [];
    const guard = await serveHook(
      { nc: env().nc, names: env().names },
      HookName.PreToolUse,
      { name: "proto-guard" },
      (e) => {
        seen.push(String(e.payload["tool_name"]));
        return { action: "block", reason: `no ${String(e.payload["tool_name"])}` };
      },
    );
    try {
      await waitFor(() => plane.tools.dispatcher.handlers().some((h) => h.name === "proto-guard"));
      const calls: Array<[string, (n: string) => [string, unknown, string]]> = [
        ["claude-code", (n) => endpoints[0]!.event("PreToolUse", { tool_name: n, tool_input: { a: 1 } })],
        ["codex", (n) => endpoints[1]!.event("PreToolUse", { tool_name: n, tool_input: { a: 1 } })],
        ["gemini-cli", (n) => endpoints[2]!.event("BeforeTool", { tool_name: n, tool_input: { a: 1 } })],
        ["copilot", (n) => endpoints[3]!.event("preToolUse", { toolName: n, toolArgs: { a: 1 } })],
        ["qwen-code", (n) => endpoints[5]!.event("PreToolUse", { tool_name: n, tool_input: { a: 1 } })],
        ["opencode", (n) => endpoints[6]!.event("tool.execute.before", { tool: n, args: { a: 1 } })],
      ];
      const refused: Record<string, unknown> = {};
      for (const [agent, input] of calls)
        for (const name of PROTO_NAMES) {
          const [path, body, query] = input(name);
          const r = await post(path, body, query);
          refused[`${agent} ${name}`] = r.status === 200 && JSON.stringify(r.body).includes(`no ${name}`);
        }
      expect(refused).toEqual(Object.fromEntries(Object.keys(refused).map((k) => [k, true])));
      expect(new Set(seen)).toEqual(new Set(PROTO_NAMES));
    } finally {
      await guard.close();
    }
  }, 120_000);

  it("the tool-executor answers unknown_tool and the dispatcher unknown_hook for each name", async () => {
    const { nc, names } = env();
    const codes: Record<string, unknown> = {};
    const codeOf = (subject: string, body: unknown) =>
      requestJson(nc, subject, body, { timeoutMs: 10_000 }).then(
        () => "no error",
        (err: { code?: string }) => err.code,
      );
    for (const name of PROTO_NAMES) {
      codes[`tool ${name}`] = await codeOf(names.toolExecute, {
        tool_name: name,
        arguments: {},
        correlation: { session_id: "s-proto", turn_id: "t", tool_call_id: randomUUID() },
      });
      codes[`hook ${name}`] = await codeOf(names.hookInvoke(name as HookName), { payload: {} });
    }
    expect(codes).toEqual(
      Object.fromEntries(
        PROTO_NAMES.flatMap((n) => [
          [`tool ${n}`, "unknown_tool"],
          [`hook ${n}`, "unknown_hook"],
        ]),
      ),
    );
  }, 60_000);

  it("a handler of each name registers and is called like any other", async () => {
    const conn = { nc: env().nc, names: env().names };
    const called = new Set<string>();
    const handlers = [];
    for (const [i, name] of PROTO_NAMES.entries())
      handlers.push(
        await serveHook(conn, HookName.SessionStart, { name, priority: i }, () => {
          called.add(name);
          return null;
        }),
      );
    try {
      await waitFor(() => plane.tools.dispatcher.handlers().length >= PROTO_NAMES.length);
      const reply = (await requestJson(
        conn.nc,
        conn.names.hookInvoke("SessionStart"),
        {
          payload: { model: "m", provider: "p", resumed: false, status: "active" },
        },
        { timeoutMs: 10_000 },
      )) as { decisions?: unknown[]; handler_errors?: unknown[] };
      expect(reply.handler_errors).toEqual([]);
      expect(called).toEqual(new Set(PROTO_NAMES));
    } finally {
      for (const h of handlers) await h.close();
    }
  }, 60_000);

  it("the console API answers each name in a path or a query as it answers any unknown name", async () => {
    const paths = (n: string) => [
      `/api/sessions/${n}/story`,
      `/api/runs/${n}/timeline`,
      `/api/handlers/${n}/${n}`,
      `/api/handlers/PreToolUse/${n}`,
      `/api/sessions?${n}=1`,
      `/api/runs?${n}=1`,
      `/api/receipts?${n}=1`,
      `/api/stats?${n}=1`,
      `/api/policies?${n}=1`,
      `/api/approvals?${n}=1`,
      `/api/${n}`,
    ];
    const CONTROL = "zzunknown";
    const answer = async (path: string, name: string) => {
      const r = await plane.api(path);
      // The name echoed back is the name asked for: compare the answers with it taken out.
      return { status: r.status, body: JSON.stringify(r.body).replaceAll(name, "NAME") };
    };
    const control = await Promise.all(paths(CONTROL).map((p) => answer(p, CONTROL)));
    const wrong: string[] = [];
    for (const name of PROTO_NAMES) {
      const each = paths(encodeURIComponent(name));
      for (const [i, path] of each.entries()) {
        const r = await answer(path, encodeURIComponent(name));
        if (
          r.status >= 500 ||
          r.status !== control[i]?.status ||
          (r.status >= 400 && r.body !== control[i]?.body)
        )
          wrong.push(`${path}: ${r.status} ${r.body.slice(0, 160)} (unknown: ${control[i]?.status})`);
      }
    }
    expect(wrong).toEqual([]);
  }, 60_000);

  it("geode policy add --pack NAME refuses each name as no such pack", async () => {
    for (const name of PROTO_NAMES.filter((n) => /^[a-z0-9]/.test(n.toLowerCase()))) {
      const r = await runCliCaptured(["policy", "add", "--pack", name], { ...process.env, ...env().env });
      expect(r.code).not.toBe(0);
      expect(r.err).toMatch(/no pack|policy set names match/);
    }
  }, 60_000);

  it("the MCP endpoint answers each name as a method, a tool, a resource or a prompt as any unknown one", async () => {
    const rpc = async (method: string, params: Record<string, unknown>) => {
      const res = await fetch(`${plane.gateway.url}/v1/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      const text = await res.text();
      const line = text.split("\n").find((l) => l.startsWith("data: "));
      return {
        status: res.status,
        reply: JSON.parse(line ? line.slice(6) : text) as Record<string, unknown>,
      };
    };
    const shape = (r: { status: number; reply: Record<string, unknown> }) =>
      JSON.stringify({
        status: r.status,
        code: (r.reply["error"] as { code?: unknown } | undefined)?.code ?? null,
        isError: (r.reply["result"] as { isError?: unknown } | undefined)?.isError ?? null,
      });
    const unknown = {
      method: shape(await rpc("no-such/method", {})),
      tool: shape(await rpc("tools/call", { name: "nosuchtool", arguments: {} })),
      resource: shape(await rpc("resources/read", { uri: "nosuch_file:///a" })),
      prompt: shape(await rpc("prompts/get", { name: "nosuch_p" })),
    };
    expect(JSON.parse(unknown.method).code).toBe(-32601);
    expect(JSON.parse(unknown.tool).isError).toBe(true);
    expect(JSON.parse(unknown.resource).code).toBe(-32602);
    expect(JSON.parse(unknown.prompt).code).toBe(-32602);
    const answers: Record<string, string> = {};
    const expected: Record<string, string> = {};
    for (const name of PROTO_NAMES) {
      answers[`method ${name}`] = shape(await rpc(name, {}));
      expected[`method ${name}`] = unknown.method;
      const tool = await rpc("tools/call", { name, arguments: {} });
      answers[`tool ${name}`] = shape(tool);
      expected[`tool ${name}`] = unknown.tool;
      expect(JSON.stringify(tool.reply)).not.toMatch(/function|\[object|nats|subject/i);
      answers[`resource ${name}`] = shape(await rpc("resources/read", { uri: `${name}_file:///a` }));
      expected[`resource ${name}`] = unknown.resource;
      answers[`prompt ${name}`] = shape(await rpc("prompts/get", { name: `${name}_p` }));
      expected[`prompt ${name}`] = unknown.prompt;
    }
    expect(answers).toEqual(expected);
  }, 120_000);

  it("keeps serving: a real call still goes through every service", async () => {
    const r = await post(CLAUDE_CODE_HOOK_PATH, ccInput("UserPromptSubmit", { prompt: "hi" }));
    expect(r).toEqual({ status: 200, body: {} });
    const health = await fetch(`${plane.gateway.url}/healthz`);
    expect(health.status).toBe(200);
    const tools = await plane.api("/api/handlers", { token: CONSOLE_TOKEN });
    expect(tools.status).toBe(200);
  });
});
