/**
 * A lone UTF-16 surrogate (`\ud800`, which JSON carries as that escape) in what an agent sends
 * (a prompt, a command, a SessionStart model, a SessionEnd reason) reaches handlers, KV and the
 * projection as U+FFFD on every agent endpoint and on `/v1/mcp` (a client's name, a tool's
 * arguments), and the rows land (docs/hooks.md#limits).
 */
import { randomUUID } from "node:crypto";
import { type ActivityRecorder, startActivityRecorder } from "@geode/activity-recorder";
import { ensureBucket } from "@geode/bus";
import {
  CLAUDE_CODE_HOOK_PATH,
  CODEX_HOOK_PATH,
  COPILOT_HOOK_PATH,
  GEMINI_CLI_HOOK_PATH,
  HookName,
  OPENCODE_HOOK_PATH,
  QWEN_CODE_HOOK_PATH,
} from "@geode/contracts";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { type HookEnvelope, serveTool } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { startToolExecutor } from "@geode/tool-executor";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ccInput, useGatewayFixture } from "./gateway-support.js";

const fx = useGatewayFixture();

const LONE = "\ud800";
const FIXED = "\ufffd";

interface AgentCase {
  kind: string;
  /** Each input (the path it is posted to, and its body) of one session. */
  start(session: string): [string, object];
  prompt(session: string): [string, object];
  command(session: string): [string, object];
  end(session: string): [string, object];
  /** Whether the agent names its model (Gemini CLI and Copilot CLI do not). */
  model: boolean;
}

const common = (session: string, event: string, fields: object) => ({
  session_id: session,
  transcript_path: null,
  cwd: "/home/dev/project",
  hook_event_name: event,
  ...fields,
});
const copilot = (event: string, session: string, fields: object): [string, object] => [
  `${COPILOT_HOOK_PATH}?event=${event}`,
  { sessionId: session, timestamp: Date.now(), cwd: "/home/dev/project", ...fields },
];

const AGENTS: AgentCase[] = [
  {
    kind: "claude-code",
    model: true,
    start: (s) => [
      CLAUDE_CODE_HOOK_PATH,
      ccInput("SessionStart", { source: "startup", model: `m${LONE}` }, { session_id: s }),
    ],
    prompt: (s) => [
      CLAUDE_CODE_HOOK_PATH,
      ccInput("UserPromptSubmit", { prompt: `p${LONE}` }, { session_id: s }),
    ],
    command: (s) => [
      CLAUDE_CODE_HOOK_PATH,
      ccInput(
        "PreToolUse",
        { tool_name: "Bash", tool_input: { command: `echo ${LONE}` }, tool_use_id: `toolu_${randomUUID()}` },
        { session_id: s },
      ),
    ],
    end: (s) => [CLAUDE_CODE_HOOK_PATH, ccInput("SessionEnd", { reason: `r${LONE}` }, { session_id: s })],
  },
  {
    kind: "codex",
    model: true,
    start: (s) => [CODEX_HOOK_PATH, common(s, "SessionStart", { model: `m${LONE}`, source: "startup" })],
    prompt: (s) => [
      CODEX_HOOK_PATH,
      common(s, "UserPromptSubmit", { model: `m${LONE}`, turn_id: "t1", prompt: `p${LONE}` }),
    ],
    command: (s) => [
      CODEX_HOOK_PATH,
      common(s, "PreToolUse", {
        model: `m${LONE}`,
        turn_id: "t1",
        permission_mode: "bypassPermissions",
        tool_name: "Bash",
        tool_input: { command: `echo ${LONE}` },
        tool_use_id: `call_${randomUUID()}`,
      }),
    ],
    end: (s) => [CODEX_HOOK_PATH, common(s, "SessionEnd", { model: `m${LONE}`, reason: `r${LONE}` })],
  },
  {
    kind: "gemini-cli",
    model: false,
    start: (s) => [
      GEMINI_CLI_HOOK_PATH,
      common(s, "SessionStart", { timestamp: new Date().toISOString(), source: "startup" }),
    ],
    prompt: (s) => [
      GEMINI_CLI_HOOK_PATH,
      common(s, "BeforeAgent", { timestamp: new Date().toISOString(), prompt: `p${LONE}` }),
    ],
    command: (s) => [
      GEMINI_CLI_HOOK_PATH,
      common(s, "BeforeTool", {
        timestamp: new Date().toISOString(),
        tool_name: "run_shell_command",
        tool_input: { command: `echo ${LONE}` },
      }),
    ],
    end: (s) => [
      GEMINI_CLI_HOOK_PATH,
      common(s, "SessionEnd", { timestamp: new Date().toISOString(), reason: `r${LONE}` }),
    ],
  },
  {
    kind: "copilot",
    model: false,
    start: (s) => copilot("sessionStart", s, { source: "new" }),
    prompt: (s) => copilot("userPromptSubmitted", s, { prompt: `p${LONE}` }),
    // Copilot sends its tool arguments as a JSON text: the escape is inside that text.
    command: (s) =>
      copilot("preToolUse", s, { toolName: "bash", toolArgs: JSON.stringify({ command: `echo ${LONE}` }) }),
    end: (s) => copilot("sessionEnd", s, { reason: `r${LONE}` }),
  },
  {
    kind: "qwen-code",
    model: true,
    start: (s) => [QWEN_CODE_HOOK_PATH, common(s, "SessionStart", { model: `m${LONE}`, source: "startup" })],
    prompt: (s) => [
      QWEN_CODE_HOOK_PATH,
      common(s, "UserPromptSubmit", { prompt_id: `${s}########0`, prompt: `p${LONE}` }),
    ],
    command: (s) => [
      QWEN_CODE_HOOK_PATH,
      common(s, "PreToolUse", {
        prompt_id: `${s}########0`,
        tool_name: "run_shell_command",
        tool_input: { command: `echo ${LONE}` },
        tool_use_id: `toolu_${randomUUID()}`,
        tool_call_id: `call_${randomUUID()}`,
      }),
    ],
    end: (s) => [QWEN_CODE_HOOK_PATH, common(s, "SessionEnd", { reason: `r${LONE}` })],
  },
  {
    kind: "opencode",
    model: false,
    start: (s) => [OPENCODE_HOOK_PATH, { event: "session.created", session_id: s }],
    prompt: (s) => [OPENCODE_HOOK_PATH, { event: "chat.message", session_id: s, prompt: `p${LONE}` }],
    command: (s) => [
      OPENCODE_HOOK_PATH,
      {
        event: "tool.execute.before",
        session_id: s,
        tool: "bash",
        call_id: "c1",
        args: { command: `echo ${LONE}` },
      },
    ],
    end: (s) => [OPENCODE_HOOK_PATH, { event: "instance.disposed", session_id: s, reason: `r${LONE}` }],
  },
];

describe("agent endpoints: lone surrogates become U+FFFD and the rows land", () => {
  let db: ProjectionDb;
  let recorder: ActivityRecorder;
  const seen = new Map<HookName, HookEnvelope[]>();

  beforeAll(async () => {
    const { nc, names, ns, databaseUrl } = fx.env();
    db = await openProjectionDb({ ns, databaseUrl });
    recorder = await startActivityRecorder({ nc, names, db, runsDir: null });
  });
  afterAll(async () => {
    await recorder?.stop();
    await db?.close();
  });

  const watch = async () => {
    for (const hook of [
      HookName.SessionStart,
      HookName.UserPromptSubmit,
      HookName.PreToolUse,
      HookName.SessionEnd,
    ])
      seen.set(hook, await fx.serve(hook, `wf-${hook.toLowerCase()}`, () => null));
  };
  const payloadOf = (hook: HookName, session: string) =>
    seen.get(hook)?.find((e) => e.correlation.session_id === session)?.payload;

  for (const agent of AGENTS)
    it(`${agent.kind}: prompt, command, model and reason`, { timeout: 60_000 }, async () => {
      await watch();
      const session = randomUUID();
      for (const input of [agent.start, agent.prompt, agent.command, agent.end]) {
        const [path, body] = input(session);
        const reply = await fx.post(body, { path });
        expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      }
      expect(payloadOf(HookName.UserPromptSubmit, session)?.["user_input"]).toBe(`p${FIXED}`);
      expect((payloadOf(HookName.PreToolUse, session)?.["arguments"] as { command?: string })?.command).toBe(
        `echo ${FIXED}`,
      );
      expect(payloadOf(HookName.SessionEnd, session)?.["reason"]).toBe(`r${FIXED}`);
      if (agent.model) expect(payloadOf(HookName.SessionStart, session)?.["model"]).toBe(`m${FIXED}`);

      // KV keeps the session's model and reason well-formed.
      const kv = await ensureBucket(fx.env().nc, fx.env().names, "sessions");
      const record = (await kv.get(session))?.json<{ model: string; reason: string }>();
      expect(record?.reason).toBe(`r${FIXED}`);
      if (agent.model) expect(record?.model).toBe(`m${FIXED}`);

      // The projection gets every row, the end of the session included.
      const ended = await waitFor(
        () =>
          db.db
            .selectFrom("session_events")
            .selectAll()
            .where("session_id", "=", session)
            .where("kind", "=", "session.ended")
            .executeTakeFirst(),
        30_000,
        50,
      );
      expect(ended?.payload["reason"]).toBe(`r${FIXED}`);
      // Events and timeline are two streams, recorded apart: wait for the events' end as well.
      const events =
        (await waitFor(
          async () => {
            const rows = await db.db
              .selectFrom("activity_events")
              .select(["event", "payload"])
              .where("session_id", "=", session)
              .execute();
            return rows.some((e) => e.event === "session_ended") ? rows : undefined;
          },
          30_000,
          50,
        )) ?? [];
      const started = events.find((e) => e.event === "session_started");
      expect(started?.payload["agent_kind"]).toBe(agent.kind);
      if (agent.model) expect(started?.payload["model"]).toBe(`m${FIXED}`);
      expect(events.map((e) => e.event)).toEqual(
        expect.arrayContaining(["user_input_received", "session_ended"]),
      );
      expect(JSON.stringify(events)).not.toMatch(/\\ud[89a-f]/i);
      expect(recorder.stats().events.quarantined + recorder.stats().timeline.quarantined).toBe(0);
    });

  it("mcp: a client's name and a tool's arguments", { timeout: 60_000 }, async () => {
    await watch();
    const { nc, names } = fx.env();
    const executor = await startToolExecutor({ nc, names, tools: [] });
    const kv = await ensureBucket(nc, names, "mcpServers");
    await kv.put(
      "wf",
      JSON.stringify({ name: "wf", transport: "stdio", command: "true", created_at: 1, updated_by: "test" }),
    );
    const received: Array<Record<string, unknown>> = [];
    const served = await serveTool(
      { nc, names },
      {
        name: "wf_run",
        description: "runs",
        input_schema: { type: "object" },
        effect: "read",
        requires_approval: false,
        mcp: { server: "wf", tool: "run", annotations: { readOnlyHint: true } },
      },
      (args) => {
        received.push(args);
        return { result: { content: [{ type: "text", text: "ran" }] } };
      },
    );
    try {
      const call = async () => {
        const res = await fetch(`${fx.gateway().url}/v1/mcp`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            authorization: `Bearer ${fx.token()}`,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "wf_run",
          },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: {
              name: "wf_run",
              arguments: { command: `echo ${LONE}` },
              _meta: {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { name: `c${LONE}`, version: "1" },
                "io.modelcontextprotocol/clientCapabilities": {},
              },
            },
          }),
        });
        return res.text();
      };
      await waitFor(async () => (await call()).includes('"ran"'), 30_000, 100);
      expect(received.at(-1)).toEqual({ command: `echo ${FIXED}` });
      const pre = seen.get(HookName.PreToolUse)?.filter((e) => e.payload["tool_name"] === "wf_run") ?? [];
      expect((pre.at(-1)?.payload["arguments"] as { command?: string })?.command).toBe(`echo ${FIXED}`);
      const session = String(pre.at(-1)?.correlation.session_id);
      const rows = await waitFor(
        async () => {
          const r = await db.db
            .selectFrom("session_events")
            .selectAll()
            .where("session_id", "=", session)
            .execute();
          return r.some((e) => e.kind === "tool.completed") ? r : undefined;
        },
        30_000,
        50,
      );
      expect(JSON.stringify(rows)).not.toMatch(/\\ud[89a-f]/i);
      expect(recorder.stats().events.quarantined + recorder.stats().timeline.quarantined).toBe(0);
    } finally {
      await served.close();
      await executor.stop();
    }
  });
});
