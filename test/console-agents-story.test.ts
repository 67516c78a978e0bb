/**
 * One story row per call for every agent: with the `destructive-shell` pack in force, the real
 * Codex CLI, Gemini CLI, Copilot CLI and Qwen Code each run one prompt that asks for `rm -rf` (blocked) and a
 * harmless command (allowed). The console's session story shows exactly one prompt row and one row
 * per call (each naming its tool), the sessions list counts the same for every agent (Codex's
 * counts are the reference: a blocked call is a tool call too), the Policies view's latest block
 * names the tool, and a run whose hooks all ran has no governance gap.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type RunningConsole, startConsole } from "@geode/console";
import type { ConsolePolicies, ConsoleSessionStory, ConsoleSessionSummary } from "@geode/contracts";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codexSession } from "./codex-support.js";
import { CONSOLE_TOKEN, consoleGet } from "./console-support.js";
import { copilotSession } from "./copilot-support.js";
import { geminiSession } from "./gemini-support.js";
import { usePolicyPlane } from "./policy-support.js";
import { qwenSession } from "./qwen-code-support.js";

const plane = usePolicyPlane("story-laptop", ["destructive-shell"]);
const script = [{ shell: "rm -rf precious" }, { shell: "touch harmless.txt" }, { text: "Done." }];
const precious = (work: string) => {
  mkdirSync(path.join(work, "precious"));
  writeFileSync(path.join(work, "precious", "data.txt"), "keep me");
};
const CLI = { timeout: 240_000 };

let projection: ProjectionDb;
let console_: RunningConsole;

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
}, 60_000);

afterAll(async () => {
  await console_?.close();
  await projection?.close();
});

const api = <T>(route: string): Promise<T> => consoleGet<T>(console_.url, route);

/**
 * The session's summary and story once the projection holds its end (unless `ended` is false: Qwen
 * Code sends no session end headless) and both calls' records.
 */
async function endedStory(
  sessionId: string,
  ended = true,
): Promise<{ summary: ConsoleSessionSummary; story: ConsoleSessionStory }> {
  let story: ConsoleSessionStory | undefined;
  await waitFor(async () => {
    story = await api<ConsoleSessionStory>(`/api/sessions/${encodeURIComponent(sessionId)}/story`).catch(
      () => undefined,
    );
    const calls = story?.steps.filter((s) => s.kind === "tool_call") ?? [];
    return (
      (!ended || story?.session.status === "completed") &&
      calls.some((s) => s.verdict === "blocked") &&
      calls.some((s) => s.outcome === "completed")
    );
  }, 60_000);
  const page = await api<{ items: ConsoleSessionSummary[] }>(
    `/api/sessions?q=${encodeURIComponent(sessionId)}`,
  );
  const summary = page.items.find((s) => s.session_id === sessionId);
  if (!story || !summary) throw new Error(`no session ${sessionId} in the console`);
  return { summary, story };
}

/** One prompt row, one blocked rm -rf row and one allowed touch row, each naming its tool. */
function expectOneRowPerCall(story: ConsoleSessionStory, tool: string): void {
  const prompts = story.steps.filter((s) => s.kind === "prompt");
  expect(prompts, JSON.stringify(story.steps)).toHaveLength(1);
  const calls = story.steps.filter((s) => s.kind === "tool_call");
  expect(
    calls.map((s) => ({ tool: s.tool_name, verdict: s.verdict, target: s.target })),
    JSON.stringify(story.steps),
  ).toEqual([
    { tool, verdict: "blocked", target: "rm -rf precious" },
    { tool, verdict: "allowed", target: "touch harmless.txt" },
  ]);
  expect(calls[0]?.decided_by).toBe("policy");
  expect(calls[0]?.tool_call_id).not.toBeNull();
  expect(calls[1]?.tool_call_id).not.toBeNull();
  expect(story.steps.filter((s) => s.governance_gap)).toEqual([]);
}

/** The counts a reader compares across agents. */
const counts = (s: ConsoleSessionSummary) => ({
  prompts: s.prompts,
  tool_calls: s.tool_calls,
  blocked: s.blocked,
  approved: s.approved,
  denied: s.denied,
  gaps: s.gaps,
});

/** The Policies view's latest block of the session names the tool. */
async function expectBlockNamesTool(sessionId: string, tool: string): Promise<void> {
  let blocks: ConsolePolicies["blocks"] = [];
  await waitFor(async () => {
    blocks = (await api<ConsolePolicies>("/api/policies?window=1h")).blocks.filter(
      (b) => b.session_id === sessionId,
    );
    return blocks.length > 0;
  }, 30_000);
  expect(blocks.map((b) => ({ hook: b.hook, tool: b.tool_name }))).toEqual([{ hook: "PreToolUse", tool }]);
}

const seen: Record<string, ReturnType<typeof counts>> = {};

describe("the session story and the sessions list, for every agent", () => {
  it("Codex CLI: one row per call and one prompt row; its counts are the reference", CLI, async () => {
    const { run, sessionId } = await codexSession(plane, script, { prepare: precious });
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    const { summary, story } = await endedStory(sessionId);
    expectOneRowPerCall(story, "Bash");
    seen["codex"] = counts(summary);
    expect(seen["codex"]).toEqual({ prompts: 1, tool_calls: 2, blocked: 1, approved: 0, denied: 0, gaps: 0 });
    await expectBlockNamesTool(sessionId, "Bash");
  });

  it("Gemini CLI: one row per call and one prompt row; the same counts as Codex", CLI, async () => {
    const { run, sessionId } = await geminiSession(plane, script, { prepare: precious });
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    const { summary, story } = await endedStory(sessionId);
    expectOneRowPerCall(story, "run_shell_command");
    expect(counts(summary)).toEqual({
      prompts: 1,
      tool_calls: 2,
      blocked: 1,
      approved: 0,
      denied: 0,
      gaps: 0,
    });
    await expectBlockNamesTool(sessionId, "run_shell_command");
  });

  it("Copilot CLI: one row per call and one prompt row; the same counts as Codex", CLI, async () => {
    const { run, sessionId } = await copilotSession(plane, script, { prepare: precious });
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    const { summary, story } = await endedStory(sessionId);
    expectOneRowPerCall(story, "bash");
    expect(counts(summary)).toEqual({
      prompts: 1,
      tool_calls: 2,
      blocked: 1,
      approved: 0,
      denied: 0,
      gaps: 0,
    });
    await expectBlockNamesTool(sessionId, "bash");
  });

  it("Qwen Code: one row per call and one prompt row; the same counts as Codex", CLI, async () => {
    const { run, sessionId } = await qwenSession(plane, script, { prepare: precious });
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    const { summary, story } = await endedStory(sessionId, false);
    expectOneRowPerCall(story, "run_shell_command");
    expect(summary.agent_kind).toBe("qwen-code");
    expect(counts(summary)).toEqual({
      prompts: 1,
      tool_calls: 2,
      blocked: 1,
      approved: 0,
      denied: 0,
      gaps: 0,
    });
    await expectBlockNamesTool(sessionId, "run_shell_command");
  });
});
