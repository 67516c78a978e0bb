/**
 * The pinned Codex CLI, headless, with its model traffic pointed at the agent gateway by `geode
 * connect codex --llm`: the gateway fronts the scripted Responses stand-in (which plays OpenAI).
 * The run works as before, streamed; each model call is recorded with the agent; a small budget
 * lets the first call through and Codex shows the 429 of the next; the provider key stays out of
 * everything the agent sees.
 */
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { BudgetStore } from "@geode/state";
import { GEODE_BIN } from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";
import { scratchFolders } from "./agent-process-support.js";
import { type CodexTurn, runCodex, startResponsesStandIn } from "./codex-support.js";
import { KEY_ENV, PROVIDER_KEY, useLlmFixture } from "./llm-support.js";
import type { StandInRequest } from "./stand-in-server.js";

const fx = useLlmFixture();
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function geode(
  args: string[],
  extra: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [GEODE_BIN, ...args],
      { env: { ...process.env, ...fx.env().env, ...extra } },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === "number" ? error.code : 1) : 0,
          out: stdout,
          err: stderr,
        }),
    );
  });
}

/** A Codex home whose config.toml `geode connect codex --llm openai` pointed at the gateway. */
async function codexThroughGateway(script: CodexTurn[]) {
  // Only the model calls (the fixture's readiness probe goes through too).
  const seen: StandInRequest[] = [];
  const api = await startResponsesStandIn(script, (r) => {
    if (r.url === "/v1/responses") seen.push(r);
  });
  cleanups.push(() => api.close());
  const dirs = scratchFolders("codex-llm");
  cleanups.push(dirs.cleanup);
  const config = path.join(dirs.home, "config.toml");
  writeFileSync(
    config,
    ['model = "gpt-5-codex"', 'approval_policy = "never"', 'sandbox_mode = "danger-full-access"', ""].join(
      "\n",
    ),
  );
  const add = await geode([
    "llm",
    "add",
    "openai",
    "--kind",
    "openai",
    "--url",
    `${api.url}/v1`,
    "--key-env",
    KEY_ENV,
  ]);
  expect(add.code, add.err).toBe(0);
  await fx.provider({ name: "openai", kind: "openai", base_url: `${api.url}/v1` });
  const connect = await geode([
    "connect",
    "codex",
    "--llm",
    "openai",
    "--url",
    fx.gateway().url,
    "--write",
    config,
  ]);
  expect(connect.code, connect.err).toBe(0);
  return { api, seen, ...dirs, config };
}

describe("Codex through the LLM gateway", () => {
  it("runs as before, streamed through the gateway, each call recorded with its agent and cost", async () => {
    const price = await geode(["llm", "price", "gpt-5*", "--input", "2", "--output", "10"]);
    expect(price.code, price.err).toBe(0);
    const { seen, home, work, config } = await codexThroughGateway([
      { shell: "echo through-the-gateway" },
      { text: "All done." },
    ]);
    expect(readFileSync(config, "utf8")).toContain(`base_url = "${fx.gateway().url}/v1/llm/openai"`);
    const run = await runCodex({
      prompt: "Say hi.",
      home,
      cwd: work,
      env: { GEODE_AGENT_TOKEN: fx.token() },
      timeoutMs: 120_000,
    });
    expect(run.code, run.stderr).toBe(0);
    const messages = run.events.filter(
      (e) => (e["item"] as { type?: string } | undefined)?.type === "agent_message",
    );
    expect(JSON.stringify(messages)).toContain("All done.");
    expect(JSON.stringify(run.events)).toContain("through-the-gateway");
    expect(seen.length).toBe(2);
    for (const r of seen) {
      expect(r.headers?.["authorization"]).toBe(`Bearer ${PROVIDER_KEY}`);
      expect(r.url).toBe("/v1/responses");
    }
    const ended = (await fx.llmEvents()).filter((e) => e.event === "llm_call_ended");
    expect(ended).toHaveLength(2);
    const sessions = new Set(ended.map((e) => e.correlation.session_id));
    expect(sessions.size).toBe(1);
    expect([...sessions][0]).toMatch(/^llm-laptop-/);
    for (const e of ended)
      expect(e.payload).toMatchObject({
        provider: "openai",
        model: "gpt-5-codex",
        input_tokens: 12,
        output_tokens: 8,
        stream: true,
        cost_usd: (12 * 2 + 8 * 10) / 1e6,
      });
    expect(run.stdout + run.stderr).not.toContain(PROVIDER_KEY);
  }, 180_000);

  it("a budget of a few tokens lets the first call through; Codex shows the 429 of the next", async () => {
    const set = await geode(["budget", "set", "agent.laptop", "--tokens", "15", "--window", "1h"]);
    expect(set.code, set.err).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    const before = (await fx.llmEvents()).length;
    // Codex would reconnect after a 429's Retry-After (the window's end); connect wrote no retries,
    // so it ends the turn at once with the 429 shown.
    const { seen, home, work, config } = await codexThroughGateway([
      { shell: "echo first" },
      { text: "never reached" },
    ]);
    expect(readFileSync(config, "utf8")).toMatch(/request_max_retries = 0\nstream_max_retries = 0\n/);
    try {
      const run = await runCodex({
        prompt: "Go.",
        home,
        cwd: work,
        env: { GEODE_AGENT_TOKEN: fx.token() },
        timeoutMs: 60_000,
      });
      expect(run.code, run.stdout).not.toBeNull();
      expect(seen.length).toBe(1);
      const shown = run.stdout + run.stderr;
      expect(shown).toContain("429 Too Many Requests");
      expect(shown).not.toContain(PROVIDER_KEY);
      const events = (await fx.llmEvents()).slice(before);
      expect(events.filter((e) => e.event === "llm_call_ended")).toHaveLength(1);
      const refused = events.filter((e) => e.event === "cost_limit_exceeded");
      expect(refused.length).toBeGreaterThan(0);
      expect(refused[0]?.payload).toMatchObject({ budget: "agent.laptop", reason: "limit_tokens" });
      const ls = await geode(["budget", "ls", "--json"]);
      const rows = JSON.parse(ls.out) as Array<{ key: string; used: { tokens: number; calls: number } }>;
      expect(rows.find((r) => r.key === "agent.laptop")?.used).toMatchObject({ tokens: 20, calls: 1 });
    } finally {
      await (await BudgetStore.open({ nc: fx.env().nc, names: fx.env().names })).remove("agent.laptop");
    }
  }, 200_000);
});
