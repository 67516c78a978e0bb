/**
 * Ungoverned calls are seen: a tool result that reaches the gateway for a call whose PreToolUse
 * never did is recorded as one `governance.gap` (the real Gemini CLI with its BeforeTool hook
 * removed from its settings), shown in the console's sessions list and story, and counted by the
 * gateway's `geode_governance_gaps_total{agent_kind}` (a Codex PostToolUse posted to a gateway
 * process with a `tool_use_id` that never had a PreToolUse). A run whose hooks all ran has none.
 * `geode agents ls` shows each agent's last `geode connect --check` and the guarded hooks seen.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { type RunningConsole, startConsole } from "@geode/console";
import type { ConsoleAgents, ConsoleSessionStory, ConsoleSessionSummary } from "@geode/contracts";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { type SpawnedProcess, spawnService, waitFor } from "@geode/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useAgentPlane } from "./agent-plane-support.js";
import { CONSOLE_TOKEN, consoleGet } from "./console-support.js";
import { geminiHomeFor, runGemini, startGeminiStandIn } from "./gemini-support.js";

const AGENT = "gap-laptop";
const plane = useAgentPlane(AGENT);
const CLI = { timeout: 240_000 };

let projection: ProjectionDb;
let console_: RunningConsole;
let db: pg.Client;

beforeAll(async () => {
  const env = plane.env();
  projection = await openProjectionDb({ ns: env.ns, databaseUrl: env.databaseUrl });
  console_ = await startConsole({
    conn: { nc: env.nc, names: env.names },
    token: CONSOLE_TOKEN,
    port: 0,
    approvalTimeoutMs: 30_000,
    projection: { db: projection.db, ns: projection.ns },
  });
  db = new pg.Client({ connectionString: env.databaseUrl });
  await db.connect();
}, 60_000);

afterAll(async () => {
  await db?.end();
  await console_?.close();
  await projection?.close();
});

const api = <T>(route: string): Promise<T> => consoleGet<T>(console_.url, route);

/** The session's `governance.gap` payloads, once its end is projected. */
async function gapsOf(sessionId: string): Promise<Array<Record<string, unknown>>> {
  const schema = plane.env().ns;
  await waitFor(async () => {
    const { rows } = await db.query(
      `select count(*)::int as n from ${schema}.session_events where session_id = $1 and kind = 'session.ended'`,
      [sessionId],
    );
    return rows[0].n === 1;
  }, 60_000);
  const { rows } = await db.query(
    `select payload from ${schema}.session_events where session_id = $1 and kind = 'governance.gap'`,
    [sessionId],
  );
  return rows.map((r) => r.payload as Record<string, unknown>);
}

/** One Gemini CLI session running `touch harmless.txt`, with `edit` applied to its settings first. */
async function geminiTouch(edit: (settings: Record<string, unknown>) => void = () => {}) {
  const api = await startGeminiStandIn([{ shell: "touch harmless.txt" }, { text: "Done." }]);
  plane.cleanups.push(() => api.close());
  const { home, work, settings } = await geminiHomeFor(plane);
  const json = JSON.parse(readFileSync(settings, "utf8")) as Record<string, unknown>;
  edit(json);
  writeFileSync(settings, JSON.stringify(json));
  const run = await runGemini({
    prompt: "Do the task.",
    home,
    cwd: work,
    apiUrl: api.url,
    env: { GEODE_AGENT_TOKEN: plane.token() },
  });
  expect(run.code, run.stderr.slice(-1500)).toBe(0);
  const init = run.events.find((e) => e["type"] === "init");
  return { home, work, sessionId: String(init?.["session_id"] ?? "") };
}

/** `geode connect gemini-cli --check` in `work`, as a user runs it there. */
async function check(home: string, work: string) {
  const before = process.cwd();
  process.chdir(work);
  try {
    return await plane.geode(["connect", "gemini-cli", "--check", "--url", plane.gateway().url], {
      HOME: home,
      GEODE_AGENT_TOKEN: plane.token(),
    });
  } finally {
    process.chdir(before);
  }
}

interface AgentRow {
  name: string;
  last_check: { ok: boolean; agent_kind: string; detail: string; at: number } | null;
  guarded_hooks: string[];
}
async function agentRow(): Promise<AgentRow | undefined> {
  const ls = await plane.geode(["agents", "ls", "--json"]);
  expect(ls.code, ls.err).toBe(0);
  return (JSON.parse(ls.out) as AgentRow[]).find((a) => a.name === AGENT);
}

describe("governance gaps", () => {
  let normal: { home: string; work: string; sessionId: string };

  it(
    "a Gemini CLI run whose hooks all ran has no gap; agents ls shows its guarded hook and its check",
    CLI,
    async () => {
      const before = await agentRow();
      expect(before).toMatchObject({ last_check: null, guarded_hooks: [] });
      normal = await geminiTouch();
      expect(await gapsOf(normal.sessionId)).toEqual([]);
      const ok = await check(normal.home, normal.work);
      expect(ok.code, ok.err).toBe(0);
      await waitFor(async () => (await agentRow())?.last_check?.ok === true, 30_000);
      const row = await agentRow();
      expect(row?.guarded_hooks).toEqual(["PreToolUse"]);
      expect(row?.last_check).toMatchObject({ ok: true, agent_kind: "gemini-cli" });
      expect(row?.last_check?.detail).toMatch(/^ok: /);
      // The console's Agents view reads the same.
      const { items } = await api<ConsoleAgents>("/api/agents");
      expect(items.find((a) => a.name === AGENT)).toMatchObject({
        kinds: ["gemini-cli"],
        guarded_hooks: ["PreToolUse"],
        last_check: { ok: true, agent_kind: "gemini-cli" },
      });
      const table = await plane.geode(["agents", "ls"]);
      expect(table.out).toMatch(/last check +guarded hooks seen/);
      expect(table.out).toMatch(new RegExp(`${AGENT} .* ok \\(gemini-cli, [0-9-]+ [0-9:]+\\) +PreToolUse`));
    },
  );

  it(
    "a Gemini CLI run without its BeforeTool hook gives one governance.gap, red in the sessions list and the story",
    CLI,
    async () => {
      const { home, work, sessionId } = await geminiTouch((s) => {
        delete (s["hooks"] as Record<string, unknown>)["BeforeTool"];
      });
      expect(await gapsOf(sessionId)).toEqual([
        { agent: AGENT, agent_kind: "gemini-cli", tool_name: "run_shell_command", missing: "PreToolUse" },
      ]);
      let story: ConsoleSessionStory | undefined;
      await waitFor(async () => {
        story = await api<ConsoleSessionStory>(`/api/sessions/${encodeURIComponent(sessionId)}/story`);
        return story.session.status === "completed";
      }, 30_000);
      const calls = story?.steps.filter((s) => s.kind === "tool_call") ?? [];
      expect(calls.map((s) => ({ tool: s.tool_name, gap: s.governance_gap, outcome: s.outcome }))).toEqual([
        { tool: "run_shell_command", gap: true, outcome: "completed" },
      ]);
      const page = await api<{ items: ConsoleSessionSummary[] }>(
        `/api/sessions?q=${encodeURIComponent(sessionId)}`,
      );
      expect(page.items.find((s) => s.session_id === sessionId)).toMatchObject({ gaps: 1, tool_calls: 1 });
      // A check that fails (here: the folder is no longer trusted) is the last one agents ls shows.
      rmSync(path.join(home, ".gemini", "trustedFolders.json"));
      const bad = await check(home, work);
      expect(bad.code).toBe(1);
      await waitFor(async () => (await agentRow())?.last_check?.ok === false, 30_000);
      expect((await agentRow())?.last_check?.detail).toBe(bad.err.trim());
    },
  );
});

/** A free loopback port (for the spawned gateway's metrics). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

describe("geode_governance_gaps_total", () => {
  let gateway: SpawnedProcess | undefined;
  afterAll(async () => {
    await gateway?.stop("SIGTERM");
  });

  it("counts a PostToolUse whose tool_use_id never had a PreToolUse, by agent kind, and not a governed call", async () => {
    const metricsPort = await freePort();
    gateway = spawnService("services/agent-gateway/src/main.ts", {
      ...plane.env().env,
      GEODE_GATEWAY_ADDR: "127.0.0.1:0",
      GEODE_METRICS_PORT: String(metricsPort),
      LOG_LEVEL: "info",
    });
    await gateway.waitForOutput(/agent-gateway listening on/);
    const url = /agent-gateway listening on (http:\/\/[0-9.:]+)/.exec(gateway.output())?.[1] ?? "";
    const post = async (body: Record<string, unknown>) => {
      const res = await fetch(`${url}/v1/codex/hook`, {
        method: "POST",
        headers: { authorization: `Bearer ${plane.token()}`, "content-type": "application/json" },
        body: JSON.stringify({
          session_id: "gap-metric-session",
          turn_id: "t1",
          cwd: "/tmp",
          transcript_path: null,
          model: "gpt-test",
          permission_mode: "bypassPermissions",
          tool_name: "Bash",
          tool_input: { command: "ls" },
          ...body,
        }),
      });
      expect(res.status, await res.text()).toBe(200);
    };
    const gaps = async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return /^geode_governance_gaps_total\{agent_kind="codex"\} (\d+)$/m.exec(text)?.[1];
    };
    // A governed call: PreToolUse, then its result.
    await post({ hook_event_name: "PreToolUse", tool_use_id: "call-governed" });
    await post({ hook_event_name: "PostToolUse", tool_use_id: "call-governed", tool_response: "a" });
    expect(await gaps()).toBe("0");
    // A result that names a call the plane never saw.
    await post({ hook_event_name: "PostToolUse", tool_use_id: "call-never-announced", tool_response: "b" });
    expect(await gaps()).toBe("1");
    const recorded = `select tool_call_id, payload from ${plane.env().ns}.session_events where session_id = 'gap-metric-session' and kind = 'governance.gap'`;
    await waitFor(async () => (await db.query(recorded)).rows.length > 0, 30_000);
    expect((await db.query(recorded)).rows).toEqual([
      {
        tool_call_id: "call-never-announced",
        payload: { agent: AGENT, agent_kind: "codex", tool_name: "Bash", missing: "PreToolUse" },
      },
    ]);
  });
});
