/**
 * The pinned Codex CLI, headless, with its model traffic pointed at the agent gateway by `geode
 * connect codex --llm`: the gateway fronts the scripted Responses stand-in (which plays OpenAI).
 * The run works as before, streamed; each model call is recorded with the agent; a small budget
 * lets the first call through and Codex shows the 429 of the next; the provider key stays out of
 * everything the agent sees.
 */
import { readFileSync } from "node:fs";
import { BudgetStore } from "@geode/state";
import { describe, expect, it } from "vitest";
import { type CodexTurn, runCodex, startResponsesStandIn } from "./codex-support.js";
import {
  connectThroughLlmGateway,
  expectLlmCallsRecorded,
  type LlmAgentRow,
  PROVIDER_KEY,
  useLlmFixture,
} from "./llm-support.js";

const fx = useLlmFixture();
const { geode } = fx;

/** Codex as a row of the LLM gateway's agents: the Responses stand-in plays OpenAI. */
const codexRow = (script: CodexTurn[]): LlmAgentRow => ({
  agent: "codex",
  provider: { name: "openai", kind: "openai" },
  startStandIn: (gate) => startResponsesStandIn(script, gate),
  baseUrl: (url) => `${url}/v1`,
  isModelCall: (r) => r.url === "/v1/responses",
  config: {
    file: "config.toml",
    before: [
      'model = "gpt-5-codex"',
      'approval_policy = "never"',
      'sandbox_mode = "danger-full-access"',
      "",
    ].join("\n"),
  },
});

/** A Codex home whose config.toml `geode connect codex --llm openai` pointed at the gateway. */
async function codexThroughGateway(script: CodexTurn[]) {
  return connectThroughLlmGateway(fx, codexRow(script));
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
    const ended = await expectLlmCallsRecorded(fx, {
      seen,
      keyHeader: { name: "authorization", value: `Bearer ${PROVIDER_KEY}` },
      calls: 2,
      payload: {
        provider: "openai",
        model: "gpt-5-codex",
        input_tokens: 12,
        output_tokens: 8,
        stream: true,
        cost_usd: (12 * 2 + 8 * 10) / 1e6,
      },
      said: run.stdout + run.stderr,
    });
    const sessions = new Set(ended.map((e) => e.correlation.session_id));
    expect(sessions.size).toBe(1);
    expect([...sessions][0]).toMatch(/^llm-laptop-/);
  }, 180_000);

  it("a budget of a few tokens lets the first call through; Codex shows the 429 of the next", async () => {
    const set = await geode(["budget", "set", "agent.laptop", "--tokens", "15", "--window", "1h"]);
    expect(set.code, set.err).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    const before = (await fx.llmEvents()).length;
    // Codex would reconnect after a 429's Retry-After (the window's end); connect set its retries to 0,
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
