/**
 * The six pinned agent CLIs as MCP clients of the plane (DESIGN section 19), headless against
 * scripted model stand-ins, each configured by `geode connect <agent> --mcp --write PATH` and
 * calling the real `@modelcontextprotocol/server-filesystem` through the plane: agent → `POST
 * /v1/mcp` on the agent-gateway → tool-executor (hooks, policies, approvals) → mcp-bridge (the
 * record `fs` written by `geode mcp add`) → the upstream on a temp root.
 *
 * One agent session each, three calls of `fs_write_file`: a plain file that lands; `.env`, which
 * the `secrets-read` pack refuses before the upstream sees it, the model reading why; and, with
 * `mcp-safety` added between two model turns, a file that waits for a person and lands once
 * they allow it in the console. `geode audit` and the console's story then show each call with
 * the agent.
 */
import { randomUUID } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type RunningConsole, startConsole } from "@geode/console";
import type { ConsoleSessionStory, ConsoleSessionSummary } from "@geode/contracts";
import { type McpBridge, startMcpBridge } from "@geode/mcp-bridge";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { ToolStore } from "@geode/state";
import { REPO_ROOT, waitFor } from "@geode/testing";
import { startToolExecutor, type ToolExecutor } from "@geode/tool-executor";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentProcess, scratchFolders } from "./agent-process-support.js";
import { chatToolOutputs, startChatCompletionsStandIn } from "./chat-completions-stand-in.js";
import { runClaude, startAnthropicStandIn } from "./claude-code-support.js";
import { codexToolOutputs, providerConfig, runCodex, startResponsesStandIn } from "./codex-support.js";
import { CONSOLE_TOKEN, consoleGet } from "./console-support.js";
import { copilotToolOutputs, runCopilot, startChatStandIn } from "./copilot-support.js";
import {
  geminiScratch,
  geminiToolOutputs,
  runGemini,
  startGeminiStandIn,
  trustFolder,
} from "./gemini-support.js";
import { opencodeScratch, runOpencode } from "./opencode-support.js";
import { keptLogger, usePolicyPlane } from "./policy-support.js";
import { qwenScratch, runQwen } from "./qwen-code-support.js";
import type { StandInGate } from "./stand-in-server.js";

const AGENT = "mcp-laptop";
const plane = usePolicyPlane(AGENT, ["secrets-read"]);
const FS_SERVER = path.join(REPO_ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
/** The upstream tool, as the bridge registers it (`{server}_{tool}`). */
const TOOL = "fs_write_file";
/** What the `secrets-read` pack says when it refuses a `.env` path. */
const REFUSAL = "reading .env files is not allowed";
/** Who answers the approval in the console. */
const OPERATOR = "ana";
/** One agent run: its CLI's start, four model turns, one approval. */
const RUN_MS = 300_000;
const CASE = { timeout: RUN_MS + 120_000 };

let root = "";
let executor: ToolExecutor | undefined;
let bridge: McpBridge | undefined;
let projection: ProjectionDb | undefined;
let console_: RunningConsole | undefined;
const bridgeLogs: Array<{ msg: string; fields: unknown }> = [];

beforeAll(async () => {
  const env = plane.env();
  const { nc, names } = env;
  root = realpathSync(mkdtempSync(path.join(tmpdir(), "geode-mcp-fs-")));
  executor = await startToolExecutor({ nc, names, tools: [], config: { approvalTimeoutMs: 120_000 } });
  bridge = await startMcpBridge({ nc, names, log: keptLogger(bridgeLogs) });
  projection = await openProjectionDb({ ns: env.ns, databaseUrl: env.databaseUrl });
  console_ = await startConsole({
    conn: { nc, names },
    token: CONSOLE_TOKEN,
    port: 0,
    approvalTimeoutMs: 120_000,
    projection: { db: projection.db, ns: projection.ns },
  });
  const added = await plane.geode(["mcp", "add", "fs", "--", process.execPath, FS_SERVER, root]);
  expect(added.code, added.err).toBe(0);
  const tools = await ToolStore.open({ nc, names });
  await waitFor(async () => (await tools.get(TOOL)) !== null, 60_000);
}, 120_000);

afterAll(async () => {
  await console_?.close();
  await projection?.close();
  await bridge?.stop();
  await executor?.stop();
  if (root !== "") rmSync(root, { recursive: true, force: true });
});

/** The arguments of the three calls an agent's model makes, in its own folder under the root. */
function callsFor(dir: string): {
  plain: string;
  env: string;
  asked: string;
  args: Array<Record<string, string>>;
} {
  mkdirSync(path.join(root, dir));
  const plain = path.join(root, dir, "plain.txt");
  const env = path.join(root, dir, ".env");
  const asked = path.join(root, dir, "asked.txt");
  return {
    plain,
    env,
    asked,
    args: [
      { path: plain, content: `plain by ${dir}\n` },
      { path: env, content: "API_KEY=not-for-agents\n" },
      { path: asked, content: `asked by ${dir}\n` },
    ],
  };
}

/** What one agent's case needs from its CLI: run the three scripted calls through `gate`. */
interface AgentRun {
  run: AgentProcess;
  /** The tool results the model was sent, as the agent sent them. */
  toolOutputs: string[];
}

/**
 * Adds `mcp-safety` the first time a model request carries the `.env` refusal (the turn between
 * the refused call and the asked one), and waits until the guard has it in force.
 */
function safetyGate(): { gate: StandInGate; added(): Promise<void> | undefined } {
  let added: Promise<void> | undefined;
  const gate: StandInGate = (request) => {
    if (!request.raw.includes(REFUSAL)) return;
    added ??= (async () => {
      const r = await plane.geode(["policy", "add", "--pack", "mcp-safety"]);
      expect(r.code, r.err).toBe(0);
      await plane.guard().loaded(["secrets-read", "mcp-safety"]);
    })();
    return added;
  };
  return { gate, added: () => added };
}

/** Each new MCP session of the agent in the console's list. */
async function mcpSessions(): Promise<string[]> {
  const page = await consoleGet<{ items: ConsoleSessionSummary[] }>(
    console_?.url ?? "",
    `/api/sessions?agent=${AGENT}&agent_kind=mcp`,
  );
  return page.items.map((s) => s.session_id);
}

/** The console's pending approvals. */
async function pendingApprovals(): Promise<Array<Record<string, unknown>>> {
  return (await consoleGet<{ items: Array<Record<string, unknown>> }>(console_?.url ?? "", "/api/approvals"))
    .items;
}

/**
 * Runs one agent's session and, while it runs, answers the first approval of `TOOL` in the
 * console (allow, as OPERATOR), noting whether the asked file was already there at that moment.
 */
async function runCase(
  dir: string,
  start: (gate: StandInGate, args: Array<Record<string, string>>) => Promise<AgentRun>,
) {
  const calls = callsFor(dir);
  const before = new Set(await mcpSessions());
  plane.cleanups.push(async () => {
    const rm = await plane.geode(["policy", "rm", "mcp-safety"]);
    if (rm.code === 0) await plane.guard().loaded(["secrets-read"]);
  });
  let finished = false;
  const asking: { approval?: Record<string, unknown>; landedBefore?: boolean } = {};
  const approver = (async () => {
    while (!finished && asking.approval === undefined) {
      const pending = (await pendingApprovals()).find((a) => a["tool_name"] === TOOL);
      if (pending) {
        asking.approval = pending;
        asking.landedBefore = existsSync(calls.asked);
        const answer = await fetch(`${console_?.url}/api/approvals/answer`, {
          method: "POST",
          headers: { authorization: `Bearer ${CONSOLE_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({
            approval_id: pending["approval_id"],
            decision: "allow",
            reason: "fine",
            operator: OPERATOR,
          }),
        });
        expect(answer.status).toBe(200);
      } else await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const safety = safetyGate();
  let result: AgentRun;
  try {
    result = await start(safety.gate, calls.args);
  } finally {
    finished = true;
    await approver;
  }
  // The pack was added between the turns (its failure is the test's, not the agent's).
  await safety.added();
  const detail = `exit ${result.run.code}\n${JSON.stringify(result.toolOutputs).slice(0, 3000)}\n${result.run.stdout.slice(-3000)}\n${result.run.stderr.slice(-3000)}`;
  const sessions = (await mcpSessions()).filter((s) => !before.has(s));
  return { ...result, ...calls, asking, detail, sessions };
}

/** (a), (b), (c): what landed, what the model was told, what a person was asked. */
function expectCalls(c: Awaited<ReturnType<typeof runCase>>, dir: string): void {
  // (a) a permitted call lands its file.
  expect(existsSync(c.plain), c.detail).toBe(true);
  expect(readFileSync(c.plain, "utf8")).toBe(`plain by ${dir}\n`);
  // (b) the refused call never reached the upstream, and the model read why.
  expect(existsSync(c.env), c.detail).toBe(false);
  expect(
    c.toolOutputs.some((o) => o.includes(REFUSAL)),
    JSON.stringify(c.toolOutputs),
  ).toBe(true);
  // (c) with mcp-safety, the call waited for a person and landed once they allowed it.
  expect(c.asking.approval, c.detail).toMatchObject({ tool_name: TOOL });
  expect(String(c.asking.approval?.["detail"] ?? "")).toContain("asked.txt");
  expect(c.asking.landedBefore).toBe(false);
  expect(readFileSync(c.asked, "utf8")).toBe(`asked by ${dir}\n`);
}

interface AuditRow {
  name: string;
  extension: string;
  status: string;
  tool_call_id: string;
  agent: string | null;
  agent_kind: string | null;
  reason: string | null;
  approval: { decision: string; approver: string | null } | null;
}

/**
 * (d) `geode audit` and the console's story show the session's three calls with the agent; the
 * session is the agent's MCP session, named after the client it said it was (`client`).
 */
async function expectRecorded(sessions: string[], client: RegExp): Promise<void> {
  expect(sessions).toHaveLength(1);
  const sessionId = sessions[0] as string;
  expect(sessionId).toMatch(client);
  let rows: AuditRow[] = [];
  await waitFor(async () => {
    const audit = await plane.geode(["audit", "--session", sessionId, "--json", "--limit", "200"]);
    rows = JSON.parse(audit.out || "[]") as AuditRow[];
    const pre = rows.filter((r) => r.name === "PreToolUse" && r.extension === "policy");
    return new Set(pre.map((r) => r.tool_call_id)).size === 3 && rows.some((r) => r.approval !== null);
  }, 30_000);
  for (const r of rows) expect(r).toMatchObject({ agent: AGENT, agent_kind: "mcp" });
  const blocked = rows.filter((r) => r.status === "block");
  expect(blocked).toEqual([
    expect.objectContaining({
      name: "PreToolUse",
      extension: "policy",
      reason: expect.stringContaining("secrets-read.env-file"),
    }),
  ]);
  expect(rows.filter((r) => r.approval !== null).map((r) => r.approval)).toContainEqual({
    decision: "allow",
    approver: OPERATOR,
  });
  let story: ConsoleSessionStory | undefined;
  await waitFor(async () => {
    story = await consoleGet<ConsoleSessionStory>(
      console_?.url ?? "",
      `/api/sessions/${encodeURIComponent(sessionId)}/story`,
    );
    const calls = story.steps.filter((s) => s.kind === "tool_call");
    return (
      calls.length === 3 &&
      calls[0]?.outcome != null &&
      calls[2]?.outcome != null &&
      calls[2]?.decided_by != null
    );
  }, 30_000);
  const steps = story?.steps.filter((s) => s.kind === "tool_call") ?? [];
  expect(
    steps.map((s) => ({ tool: s.tool_name, verdict: s.verdict })),
    JSON.stringify(steps),
  ).toEqual([
    { tool: TOOL, verdict: "allowed" },
    { tool: TOOL, verdict: "blocked" },
    { tool: TOOL, verdict: "approved" },
  ]);
  expect(steps.map((s) => s.outcome)).toEqual(["completed", "not run", "completed"]);
  expect(steps[1]).toMatchObject({ decided_by: "policy", reason: expect.stringContaining(REFUSAL) });
  expect(steps[2]?.decided_by).toBe(OPERATOR);
  expect(story?.session).toMatchObject({
    agent: AGENT,
    agent_kind: "mcp",
    tool_calls: 3,
    blocked: 1,
    approved: 1,
  });
  // The table names the agent on every row, and the person who allowed the asked call.
  const table = await plane.geode(["audit", "--session", sessionId, "--limit", "200"]);
  expect(table.out).toContain(`${AGENT} (mcp)`);
  expect(table.out).toContain(`allow by ${OPERATOR}`);
}

/** `geode connect <agent> --mcp` to the plane's gateway, writing `file`; it must succeed. */
async function connectMcp(agent: string, file: string, env: Record<string, string>): Promise<void> {
  const r = await plane.geode(
    ["connect", agent, "--mcp", "--url", plane.gateway().url, "--write", file],
    env,
  );
  expect(r.code, `${r.out}\n${r.err}`).toBe(0);
}

describe("Claude Code through the MCP gateway", () => {
  it(
    "writes a file, is refused .env with the reason, waits for a person for the asked file; recorded",
    async () => {
      const c = await runCase("claude", async (gate, args) => {
        const api = await startAnthropicStandIn(
          [...args.map((input) => ({ tool: { name: `mcp__geode__${TOOL}`, input } })), { text: "Done." }],
          gate,
        );
        plane.cleanups.push(() => api.close());
        const dirs = scratchFolders("cc-mcp");
        plane.cleanups.push(dirs.cleanup);
        const file = path.join(dirs.home, ".claude", "geode-mcp.json");
        await connectMcp("claude-code", file, { HOME: dirs.home });
        const settingsFile = path.join(dirs.home, "settings.json");
        writeFileSync(settingsFile, "{}");
        const run = await runClaude({
          prompt: "Write the three files.",
          settingsFile,
          apiUrl: api.url,
          home: dirs.home,
          cwd: dirs.work,
          token: plane.token(),
          args: ["--mcp-config", file, "--strict-mcp-config", "--allowedTools", "mcp__geode"],
          env: { ENABLE_TOOL_SEARCH: "false" },
          timeoutMs: RUN_MS,
        });
        const toolOutputs = api
          .main()
          .flatMap((r) => (r.body["messages"] as Array<{ content?: unknown }>) ?? [])
          .flatMap((m) => (Array.isArray(m.content) ? (m.content as Array<Record<string, unknown>>) : []))
          .filter((b) => b["type"] === "tool_result")
          .map((b) => JSON.stringify(b["content"]));
        return { run, toolOutputs };
      });
      expect(c.run.code, c.detail).toBe(0);
      expectCalls(c, "claude");
      await expectRecorded(c.sessions, /^mcp-mcp-laptop-claude-code-/);
    },
    CASE.timeout,
  );
});

describe("Codex through the MCP gateway", () => {
  it(
    "writes a file, is refused .env with the reason, waits for a person for the asked file; recorded",
    async () => {
      const c = await runCase("codex", async (gate, args) => {
        const api = await startResponsesStandIn(
          [
            ...args.map((a) => ({ call: { name: TOOL, namespace: "mcp__geode", arguments: a } })),
            { text: "Done." },
          ],
          gate,
        );
        plane.cleanups.push(() => api.close());
        const dirs = scratchFolders("codex-mcp");
        plane.cleanups.push(dirs.cleanup);
        const config = path.join(dirs.home, "config.toml");
        writeFileSync(config, providerConfig(api.url));
        await connectMcp("codex", config, { HOME: dirs.home, CODEX_HOME: dirs.home });
        const run = await runCodex({
          prompt: "Write the three files.",
          home: dirs.home,
          cwd: dirs.work,
          env: { GEODE_AGENT_TOKEN: plane.token() },
          timeoutMs: RUN_MS,
        });
        return { run, toolOutputs: codexToolOutputs(api) };
      });
      expect(c.run.code, c.detail).toBe(0);
      expectCalls(c, "codex");
      await expectRecorded(c.sessions, /^mcp-mcp-laptop-codex-mcp-client-/);
    },
    CASE.timeout,
  );
});

describe("Gemini CLI through the MCP gateway", () => {
  it(
    "writes a file, is refused .env with the reason, waits for a person for the asked file; recorded",
    async () => {
      const c = await runCase("gemini", async (gate, args) => {
        const api = await startGeminiStandIn(
          [...args.map((a) => ({ call: { name: `mcp_geode_${TOOL}`, args: a } })), { text: "Done." }],
          gate,
        );
        plane.cleanups.push(() => api.close());
        const dirs = geminiScratch();
        plane.cleanups.push(dirs.cleanup);
        trustFolder(dirs.home, dirs.work);
        await connectMcp("gemini-cli", dirs.settings, { HOME: dirs.home });
        const run = await runGemini({
          prompt: "Write the three files.",
          home: dirs.home,
          cwd: dirs.work,
          apiUrl: api.url,
          env: { GEODE_AGENT_TOKEN: plane.token() },
          timeoutMs: RUN_MS,
        });
        return { run, toolOutputs: geminiToolOutputs(api) };
      });
      expect(c.run.code, c.detail).toBe(0);
      expectCalls(c, "gemini");
      await expectRecorded(c.sessions, /^mcp-mcp-laptop-gemini-cli-mcp-client-/);
    },
    CASE.timeout,
  );
});

describe("Copilot CLI through the MCP gateway", () => {
  it(
    "writes a file, is refused .env with the reason, waits for a person for the asked file; recorded",
    async () => {
      const c = await runCase("copilot", async (gate, args) => {
        const api = await startChatStandIn(
          [...args.map((a) => ({ call: { name: `geode-${TOOL}`, arguments: a } })), { text: "Done." }],
          gate,
        );
        plane.cleanups.push(() => api.close());
        const dirs = scratchFolders("copilot-mcp");
        plane.cleanups.push(dirs.cleanup);
        mkdirSync(path.join(dirs.home, ".copilot"), { recursive: true });
        const file = path.join(dirs.home, ".copilot", "mcp-config.json");
        await connectMcp("copilot", file, { HOME: dirs.home });
        const run = await runCopilot({
          prompt: "Write the three files.",
          home: dirs.home,
          cwd: dirs.work,
          apiUrl: api.url,
          env: { GEODE_AGENT_TOKEN: plane.token() },
          args: ["--additional-mcp-config", `@${file}`, "--allow-tool=geode"],
          timeoutMs: RUN_MS,
        });
        return { run, toolOutputs: copilotToolOutputs(api) };
      });
      expect(c.run.code, c.detail).toBe(0);
      expectCalls(c, "copilot");
      await expectRecorded(c.sessions, /^mcp-mcp-laptop-copilot-cli-/);
    },
    CASE.timeout,
  );
});

describe("Qwen Code through the MCP gateway", () => {
  it(
    "writes a file, is refused .env with the reason, waits for a person for the asked file; recorded",
    async () => {
      const c = await runCase("qwen", async (gate, args) => {
        const api = await startChatCompletionsStandIn(
          [...args.map((a) => ({ call: { name: `mcp__geode__${TOOL}`, arguments: a } })), { text: "Done." }],
          { gate },
        );
        plane.cleanups.push(() => api.close());
        const dirs = qwenScratch();
        plane.cleanups.push(dirs.cleanup);
        await connectMcp("qwen-code", dirs.settings, { HOME: dirs.home });
        // No --yolo: the entry's trust is what lets the calls run headless, the gateway deciding.
        const run = await runQwen({
          prompt: "Write the three files.",
          home: dirs.home,
          cwd: dirs.work,
          apiUrl: api.url,
          sessionId: randomUUID(),
          env: { GEODE_AGENT_TOKEN: plane.token() },
          args: [],
          timeoutMs: RUN_MS,
        });
        return { run, toolOutputs: chatToolOutputs(api) };
      });
      expect(c.run.code, c.detail).toBe(0);
      expectCalls(c, "qwen");
      await expectRecorded(c.sessions, /^mcp-mcp-laptop-qwen-cli-mcp-client-/);
    },
    CASE.timeout,
  );
});

describe("opencode through the MCP gateway", () => {
  it(
    "writes a file, is refused .env with the reason, waits for a person for the asked file; recorded",
    async () => {
      const c = await runCase("opencode", async (gate, args) => {
        const api = await startChatCompletionsStandIn(
          [...args.map((a) => ({ call: { name: `geode_${TOOL}`, arguments: a } })), { text: "Done." }],
          { gate },
        );
        plane.cleanups.push(() => api.close());
        const dirs = opencodeScratch(api.url);
        plane.cleanups.push(dirs.cleanup);
        await connectMcp("opencode", dirs.config, { HOME: dirs.home });
        const run = await runOpencode({
          prompt: "Write the three files.",
          home: dirs.home,
          cwd: dirs.work,
          env: { GEODE_AGENT_TOKEN: plane.token() },
          timeoutMs: RUN_MS,
        });
        return { run, toolOutputs: chatToolOutputs(api) };
      });
      expect(c.run.code, c.detail).toBe(0);
      expectCalls(c, "opencode");
      await expectRecorded(c.sessions, /^mcp-mcp-laptop-opencode-/);
    },
    CASE.timeout,
  );
});

describe("the bridge under six agents", () => {
  it("kept the filesystem server connected throughout", () => {
    expect(bridge?.servers()).toEqual([expect.objectContaining({ name: "fs", state: "connected" })]);
    expect(bridgeLogs.filter((l) => l.msg === "MCP server failed")).toEqual([]);
  });
});
