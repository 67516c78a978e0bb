/**
 * The pinned Claude Code, headless, with its model calls pointed at the agent gateway by `geode
 * connect claude-code --llm` (ANTHROPIC_BASE_URL and a key helper that prints the agent token):
 * the gateway fronts the scripted Messages stand-in, which plays Anthropic.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runClaude, startAnthropicStandIn } from "./claude-code-support.js";
import {
  connectThroughLlmGateway,
  expectLlmCallsRecorded,
  PROVIDER_KEY,
  useLlmFixture,
} from "./llm-support.js";

const fx = useLlmFixture();

describe("Claude Code through the LLM gateway", () => {
  it("answers through the gateway with the agent token as its key; each call recorded", async () => {
    const { seen, home, work, config } = await connectThroughLlmGateway(fx, {
      agent: "claude-code",
      provider: { name: "anthropic", kind: "anthropic" },
      startStandIn: (gate) => startAnthropicStandIn([{ text: "Hello from the gateway." }], gate),
      isModelCall: (r) => r.url.startsWith("/v1/messages"),
      config: { file: "settings.json" },
    });
    const baseUrl = JSON.parse(readFileSync(config, "utf8")).env.ANTHROPIC_BASE_URL as string;
    const run = await runClaude({
      prompt: "Say hello.",
      settingsFile: config,
      apiUrl: baseUrl,
      home,
      cwd: work,
      token: fx.token(),
      // The key comes from the settings' key helper, not from a variable.
      env: { ANTHROPIC_API_KEY: "" },
      timeoutMs: 120_000,
    });
    expect(run.result?.["result"], run.stderr + run.stdout).toBe("Hello from the gateway.");
    expect(seen.length).toBeGreaterThan(0);
    const ended = await expectLlmCallsRecorded(fx, {
      seen,
      keyHeader: { name: "x-api-key", value: PROVIDER_KEY },
      calls: seen.filter((r) => !r.url.includes("count_tokens")).length,
      payload: { provider: "anthropic", input_tokens: 12 },
      said: run.stdout + run.stderr,
    });
    expect(ended[0]?.payload).toMatchObject({ output_tokens: 8 });
  }, 180_000);
});
