/**
 * Secrets an agent sends (an API key, a bearer token, a JWT, a PEM private key, an AWS access key,
 * `password=…`, a `--token VALUE` flag) through every agent endpoint and every field it fills
 * (prompts, tool commands, tool results, the SessionStart model, the SessionEnd reason, the last
 * assistant message, compaction and sub-agent fields, opencode's plugin bodies; an MCP client's name, tool arguments and
 * result, resource URIs and prompt names on `/v1/mcp`) reach no stream message, no KV value (any
 * key, any revision kept), no Postgres row of the namespace and no run JSONL file.
 */
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { ensureBucket } from "@geode/bus";
import {
  CLAUDE_CODE_HOOK_PATH,
  CODEX_HOOK_PATH,
  COPILOT_HOOK_PATH,
  type ConsoleRecorder,
  GEMINI_CLI_HOOK_PATH,
  HookName,
  OPENCODE_HOOK_PATH,
  QWEN_CODE_HOOK_PATH,
} from "@geode/contracts";
import { serveTool } from "@geode/sdk";
import { useTestEnv, waitFor } from "@geode/testing";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Kvm } from "@nats-io/kv";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsolePlane, startConsolePlane } from "./console-support.js";
import { addAgent } from "./gateway-support.js";

/** Each planted secret, and the part of it that must never be stored. */
const PLANTED: Array<[string, string]> = [
  ["sk-PLANTEDapikey0123456789abcd", "PLANTEDapikey0123456789abcd"],
  ["Bearer PLANTEDbearer0123456789", "PLANTEDbearer0123456789"],
  ["eyJhbGciOiJIUzI1NiJ9.eyJwbGFudGVkIjoiand0In0.PLANTEDjwtSig0123", "PLANTEDjwtSig0123"],
  [
    "-----BEGIN RSA PRIVATE KEY-----\nPLANTEDpemBody0123456789\n-----END RSA PRIVATE KEY-----",
    "PLANTEDpemBody0123456789",
  ],
  ["AKIAPLANTED012345678", "AKIAPLANTED012345678"],
  ["password=PLANTEDpw0123", "PLANTEDpw0123"],
  ["--token PLANTEDflag0123", "PLANTEDflag0123"],
];
const NEEDLES = PLANTED.map(([, needle]) => needle);
/** Every secret in one text, as an agent could send it in any field. */
const S = `see ${PLANTED.map(([secret]) => secret).join(" and ")} end`;

const env = useTestEnv();
let plane: ConsolePlane;
let token = "";

beforeAll(async () => {
  plane = await startConsolePlane(env());
  token = await addAgent(env(), "leaky");
  await waitFor(() => plane.gateway.agents() === 2);
  // Every answer is escalated, so each agent's last message is parked for its owner (KV `verify`).
  await plane.tools.hook(HookName.PostVerify, { name: "park-all" }, () => ({
    action: "escalate",
    reason: "an owner reads every answer",
  }));
}, 60_000);

afterAll(async () => {
  await plane?.stop();
});

async function post(pathAndQuery: string, body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${plane.gateway.url}${pathAndQuery}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${pathAndQuery}: ${res.status} ${await res.text()}`);
}

/** Claude Code and Codex speak the same words; Codex names its model in every input. */
async function claudeStyle(hookPath: string, extra: Record<string, unknown>): Promise<void> {
  const session_id = randomUUID();
  const base = { session_id, cwd: "/w", permission_mode: "default", ...extra };
  const send = (hook_event_name: string, fields: Record<string, unknown> = {}) =>
    post(hookPath, { ...base, hook_event_name, ...fields });
  await send("SessionStart", { source: S, model: S });
  await send("UserPromptSubmit", { prompt: S, prompt_id: "p1", turn_id: "p1" });
  const call = { tool_name: "Bash", tool_input: { command: `echo ${S}`, description: S }, tool_use_id: "t1" };
  await send("PreToolUse", call);
  await send("PostToolUse", { ...call, tool_response: { stdout: S, stderr: S } });
  await send("PostToolUseFailure", { ...call, tool_use_id: "t2", error: S });
  await send("PreCompact", { trigger: S, custom_instructions: S });
  await send("PostCompact", { trigger: S });
  await send("SubagentStart", { agent_id: "sub-1", agent_type: S });
  await send("SubagentStop", { agent_id: "sub-1", agent_type: S, last_assistant_message: S });
  await send("Notification", { message: S, title: S });
  await send("Stop", { last_assistant_message: S, prompt_id: "p1", turn_id: "p1" });
  await send("SessionEnd", { reason: S });
}

async function geminiCli(): Promise<void> {
  const session_id = randomUUID();
  const send = (hook_event_name: string, fields: Record<string, unknown> = {}) =>
    post(GEMINI_CLI_HOOK_PATH, { session_id, cwd: "/w", hook_event_name, ...fields });
  await send("SessionStart", { source: S });
  await send("BeforeAgent", { prompt: S });
  const call = { tool_name: "run_shell_command", tool_input: { command: `echo ${S}` } };
  await send("BeforeTool", call);
  await send("AfterTool", { ...call, tool_response: { llmContent: S, returnDisplay: S, error: S } });
  await send("PreCompress", { trigger: S });
  await send("Notification", { message: S, details: { text: S } });
  await send("AfterAgent", { prompt: S, prompt_response: S });
  await send("SessionEnd", { reason: S });
}

async function copilot(): Promise<void> {
  const sessionId = randomUUID();
  const send = (event: string, fields: Record<string, unknown> = {}) =>
    post(`${COPILOT_HOOK_PATH}?event=${event}`, { sessionId, timestamp: Date.now(), cwd: "/w", ...fields });
  await send("sessionStart", { source: S, initialPrompt: S });
  await send("userPromptSubmitted", { prompt: S });
  const call = { toolName: "bash", toolArgs: { command: `echo ${S}` } };
  await send("preToolUse", call);
  await send("postToolUse", { ...call, toolResult: { resultType: "success", textResultForLlm: S } });
  await send("postToolUseFailure", { ...call, error: S });
  await send("subagentStart", { agentName: "helper", agentDescription: S });
  await send("subagentStop", { agentName: "helper" });
  await send("preCompact", { trigger: S });
  await send("errorOccurred", { errorContext: S, error: { message: S } });
  await send("notification", { message: S });
  await send("agentStop", { stopReason: S, lastAssistantMessage: S });
  await send("sessionEnd", { reason: S });
}

/** opencode's plugin bodies, a `task` sub-agent's session (its title and agent) included. */
async function opencode(): Promise<void> {
  const session_id = `ses_${randomUUID().replaceAll("-", "")}`;
  const child = `ses_${randomUUID().replaceAll("-", "")}`;
  const send = (event: string, fields: Record<string, unknown> = {}, id = session_id) =>
    post(OPENCODE_HOOK_PATH, { event, session_id: id, directory: "/w", ...fields });
  await send("session.created");
  await send("chat.message", { prompt: S, message_id: "msg_1", model: `standin/${S}` });
  const call = { tool: "bash", call_id: "call_1", args: { command: `echo ${S}`, description: S } };
  await send("tool.execute.before", call);
  await send("tool.execute.after", { ...call, output: S, title: S });
  const agent = `explore ${PLANTED[0]?.[0]}`;
  const sub = { parent_session_id: session_id, agent };
  await send("session.created", { ...sub, title: `${S} (@${agent} subagent)` }, child);
  await send("session.error", { ...sub, error: S }, child);
  await send("session.idle", sub, child);
  await send("session.compacting");
  await send("session.error", { error: S });
  await send("session.deleted", { reason: `deleted ${PLANTED[1]?.[0]}` });
}

/**
 * An MCP client whose name, tool arguments, resource URI and prompt name hold every secret, calling
 * an MCP tool (served here, as the mcp-bridge would) whose result holds them too.
 */
async function mcp(): Promise<void> {
  const { nc, names } = env();
  const kv = await ensureBucket(nc, names, "mcpServers");
  await kv.put(
    "vault",
    JSON.stringify({ name: "vault", transport: "stdio", command: "true", created_at: 1, updated_by: "test" }),
  );
  const served = await serveTool(
    { nc, names },
    {
      name: "vault_run",
      description: "runs a command",
      input_schema: { type: "object", properties: { command: { type: "string" } } },
      effect: "read",
      requires_approval: false,
      mcp: { server: "vault", tool: "run", annotations: { readOnlyHint: true } },
    },
    () => ({ result: { content: [{ type: "text", text: S }] } }),
  );
  const sub = nc.subscribe(names.mcpForward("vault"));
  void (async () => {
    for await (const m of sub) m.respond(JSON.stringify({ result: { contents: [], messages: [] } }));
  })();
  const client = new Client({ name: `client ${S}`, version: S });
  try {
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${plane.gateway.url}/v1/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    await waitFor(async () => (await client.listTools()).tools.some((t) => t.name === "vault_run"));
    const r = await client.callTool({ name: "vault_run", arguments: { command: `echo ${S}`, note: S } });
    if (r.isError) throw new Error(`vault_run: ${JSON.stringify(r.content)}`);
    await client.readResource({ uri: `vault_file:///${encodeURIComponent(S)}` });
    await client.getPrompt({ name: `vault_${S}`, arguments: { text: S } });
  } finally {
    await client.close();
    sub.unsubscribe();
    await served.close();
  }
}

/** Each agent's answer in a session that does not end, so its parked candidate stays in KV `verify`. */
async function parkedAnswers(): Promise<void> {
  const id = () => ({ session_id: randomUUID(), cwd: "/w", permission_mode: "default" });
  const stop = { hook_event_name: "Stop", last_assistant_message: S, prompt_id: "p9", turn_id: "p9" };
  await post(CLAUDE_CODE_HOOK_PATH, { ...id(), ...stop });
  await post(CODEX_HOOK_PATH, { ...id(), ...stop, model: S });
  await post(GEMINI_CLI_HOOK_PATH, { ...id(), hook_event_name: "AfterAgent", prompt: S, prompt_response: S });
  await post(`${COPILOT_HOOK_PATH}?event=agentStop`, { sessionId: randomUUID(), lastAssistantMessage: S });
  await post(QWEN_CODE_HOOK_PATH, { ...id(), ...stop, background_tasks: [{ description: S }] });
}

/** Where a needle shows, as `place: excerpt`. */
function hits(place: string, text: string): string[] {
  return NEEDLES.filter((n) => text.includes(n)).map((n) => `${place}: ${n}`);
}

/** Every message (subject, headers, data) of every stream of the namespace: events, timeline, each KV bucket's history. */
async function streamHits(): Promise<string[]> {
  const { jsm, ns } = env();
  const out: string[] = [];
  const decoder = new TextDecoder();
  for await (const info of jsm.streams.list()) {
    const name = info.config.name;
    if (!name.toLowerCase().includes(ns)) continue;
    const { first_seq, last_seq, messages } = (await jsm.streams.info(name)).state;
    for (let seq = first_seq; messages > 0 && seq <= last_seq; seq++) {
      const m = await jsm.streams.getMessage(name, { seq }).catch(() => null);
      if (!m) continue;
      const headers = m.header ? [...m.header.keys()].map((k) => `${k}: ${m.header?.get(k)}`).join("\n") : "";
      out.push(
        ...hits(`${name} #${seq} ${m.subject}`, `${m.subject}\n${headers}\n${decoder.decode(m.data)}`),
      );
    }
  }
  return out;
}

async function postgresHits(): Promise<string[]> {
  const { db, ns } = plane.projection;
  const tables = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = ${ns}`.execute(db);
  const out: string[] = [];
  for (const { table_name } of tables.rows) {
    const rows = await sql<{ row: string }>`select t::text as row from ${sql.id(ns, table_name)} t`.execute(
      db,
    );
    for (const r of rows.rows) out.push(...hits(`${ns}.${table_name}`, r.row));
  }
  return out;
}

function fileHits(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .flatMap((e) => {
      const file = path.join(e.parentPath, e.name);
      return hits(path.relative(dir, file), readFileSync(file, "utf8"));
    });
}

describe("secrets an agent sends", () => {
  beforeAll(async () => {
    await claudeStyle(CLAUDE_CODE_HOOK_PATH, {});
    await claudeStyle(CODEX_HOOK_PATH, { model: S, turn_id: "p1" });
    await claudeStyle(QWEN_CODE_HOOK_PATH, { submitted_prompt: S, timestamp: S });
    await geminiCli();
    await copilot();
    await opencode();
    await parkedAnswers();
    await mcp();
    // The recorder has applied every record: Postgres and the JSONL files hold all there is.
    await waitFor(async () => {
      const r = (await plane.api("/api/recorder")).body as ConsoleRecorder;
      return r.streams.length > 0 && r.streams.every((s) => s.present && s.lag === 0);
    }, 60_000);
  }, 120_000);

  it("are planted where a reader would find them unmasked (the test can fail)", async () => {
    // Each agent's session ended, and the parked answers are in KV: the scans below see the data.
    const files = readdirSync(plane.runsDir, { recursive: true }).filter((f) => String(f).endsWith(".jsonl"));
    expect(files.length).toBeGreaterThanOrEqual(4);
    const masked = await sql<{ n: number }>`
      select count(*)::int as n from ${sql.id(plane.projection.ns, "session_events")} t
      where t::text like ${"%[REDACTED]%"}`.execute(plane.projection.db);
    expect(masked.rows[0]?.n).toBeGreaterThan(0);
    const verify = await new Kvm(env().nc).open(env().names.buckets.verify);
    const parked: string[] = [];
    for await (const key of await verify.keys()) {
      const turn = (await verify.get(key))?.json<{ pending: { text: string } | null }>();
      if (turn?.pending) parked.push(turn.pending.text);
    }
    expect(parked.length).toBeGreaterThanOrEqual(4);
    expect(parked.every((t) => t.includes("[REDACTED]") && t.startsWith("see "))).toBe(true);
  });

  it("reach no stream message and no KV value of any revision", async () => {
    expect(await streamHits()).toEqual([]);
  }, 60_000);

  it("reach no Postgres row of the namespace", async () => {
    expect(await postgresHits()).toEqual([]);
  }, 60_000);

  it("reach no run JSONL file", () => {
    expect(fileHits(plane.runsDir)).toEqual([]);
  });
});
