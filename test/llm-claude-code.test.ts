/**
 * The pinned Claude Code, headless, with its model calls pointed at the agent gateway by `geode
 * connect claude-code --llm` (ANTHROPIC_BASE_URL and a key helper that prints the agent token):
 * the gateway fronts the scripted Messages stand-in, which plays Anthropic.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { GEODE_BIN } from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";
import { runClaude, scratch, startAnthropicStandIn } from "./claude-code-support.js";
import { PROVIDER_KEY, useLlmFixture } from "./llm-support.js";
import type { StandInRequest } from "./stand-in-server.js";

const fx = useLlmFixture();
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function geode(args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [GEODE_BIN, ...args],
      { env: { ...process.env, ...fx.env().env } },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === "number" ? error.code : 1) : 0,
          out: stdout,
          err: stderr,
        }),
    );
  });
}

describe("Claude Code through the LLM gateway", () => {
  it("answers through the gateway with the agent token as its key; each call recorded", async () => {
    const seen: StandInRequest[] = [];
    const api = await startAnthropicStandIn([{ text: "Hello from the gateway." }], (r) => {
      if (r.url.startsWith("/v1/messages")) seen.push(r);
    });
    cleanups.push(() => api.close());
    const dirs = scratch();
    cleanups.push(dirs.cleanup);
    await fx.provider({ name: "anthropic", kind: "anthropic", base_url: api.url });
    const settings = path.join(dirs.home, "settings.json");
    const connect = await geode([
      "connect",
      "claude-code",
      "--llm",
      "anthropic",
      "--url",
      fx.gateway().url,
      "--write",
      settings,
    ]);
    expect(connect.code, connect.err).toBe(0);
    const baseUrl = JSON.parse(readFileSync(settings, "utf8")).env.ANTHROPIC_BASE_URL as string;
    const run = await runClaude({
      prompt: "Say hello.",
      settingsFile: settings,
      apiUrl: baseUrl,
      home: dirs.home,
      cwd: dirs.work,
      token: fx.token(),
      // The key comes from the settings' key helper, not from a variable.
      env: { ANTHROPIC_API_KEY: "" },
      timeoutMs: 120_000,
    });
    expect(run.result?.["result"], run.stderr + run.stdout).toBe("Hello from the gateway.");
    expect(seen.length).toBeGreaterThan(0);
    for (const r of seen) {
      expect(r.headers?.["x-api-key"]).toBe(PROVIDER_KEY);
      expect(JSON.stringify(r.headers)).not.toContain(fx.token());
    }
    const ended = (await fx.llmEvents()).filter((e) => e.event === "llm_call_ended");
    expect(ended.length).toBe(seen.filter((r) => !r.url.includes("count_tokens")).length);
    expect(ended[0]?.payload).toMatchObject({ provider: "anthropic", input_tokens: 12, output_tokens: 8 });
    expect(run.stdout + run.stderr).not.toContain(PROVIDER_KEY);
  }, 180_000);
});
