/**
 * The pinned Gemini CLI and Copilot CLI, headless, with their model traffic pointed at the agent
 * gateway by the shell lines `geode connect gemini-cli|copilot --llm` prints (evaluated by a real
 * shell, the agent token in GEODE_AGENT_TOKEN): the gateway fronts the scripted stand-in that
 * plays the provider each speaks (the Gemini API; OpenAI Chat Completions). The run works as
 * before, streamed; each model call is recorded with the agent and its session; a small budget lets
 * the first call through and the agent shows the 429 of the next; the provider key reaches the
 * provider and nothing else.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { runCliCaptured } from "@geode/cli/testing";
import { BudgetStore } from "@geode/state";
import { afterAll, describe, expect, it } from "vitest";
import type { AgentProcess } from "./agent-process-support.js";
import { scratchFolders } from "./agent-process-support.js";
import { runCopilot, startChatStandIn } from "./copilot-support.js";
import { geminiScratch, runGemini, startGeminiStandIn, trustFolder } from "./gemini-support.js";
import { expectProviderKeyNowhere, KEY_ENV, PROVIDER_KEY, useLlmFixture } from "./llm-support.js";
import type { StandInRequest } from "./stand-in-server.js";

const fx = useLlmFixture();
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const geode = (args: string[], extra: Record<string, string> = {}) =>
  runCliCaptured(args, { ...process.env, ...fx.env().env, ...extra });

/** The variables the printed `export` lines set, as a shell evaluating them with the token sees them. */
function exported(lines: string, token: string): Record<string, string> {
  const names = [...lines.matchAll(/^export ([A-Z_][A-Z0-9_]*)=/gm)].map((m) => m[1] as string);
  const out = execFileSync(
    "bash",
    ["-c", `eval "$1"; for n in ${names.join(" ")}; do printf '%s=%s\\0' "$n" "\${!n}"; done`, "sh", lines],
    { env: { PATH: process.env["PATH"], GEODE_AGENT_TOKEN: token }, encoding: "utf8" },
  );
  return Object.fromEntries(
    out
      .split("\0")
      .filter((kv) => kv !== "")
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** What `agent.laptop`'s budget has counted in its window so far. */
async function usedTokens(): Promise<number> {
  const ls = await geode(["budget", "ls", "--json"]);
  const rows = JSON.parse(ls.out) as Array<{ key: string; used: { tokens: number } }>;
  return rows.find((r) => r.key === "agent.laptop")?.used.tokens ?? 0;
}

/** One agent as the table runs it. */
interface LlmAgentCase {
  agent: "gemini-cli" | "copilot";
  provider: { name: string; kind: "gemini" | "openai" };
  /** The base URL the provider record names for the stand-in at `url`. */
  baseUrl(url: string): string;
  /** The stand-in's model calls; `script`: one shell command, then the text that ends the turn. */
  standIn(
    script: { shell: string; text: string },
    onCall: (r: StandInRequest) => void,
  ): Promise<{ url: string; close(): Promise<void> }>;
  /** A scratch HOME and working folder for one run; `noRetry`: the agent's retries turned off. */
  scratch(noRetry: boolean): { home: string; work: string };
  /** Runs the agent in `dirs` with `vars` (connect's) in its environment. */
  run(dirs: { home: string; work: string }, vars: Record<string, string>): Promise<AgentProcess>;
  /** What the agent prints of the gateway's 429 whose message starts with `message`. */
  refusalShown(message: string): RegExp[];
  /** The slot the provider key must reach the provider in. */
  keyHeader: string;
  keyValue: string;
  model: string;
}

const CASES: LlmAgentCase[] = [
  {
    agent: "gemini-cli",
    provider: { name: "gemini", kind: "gemini" },
    baseUrl: (url) => url,
    async standIn(script, onCall) {
      const api = await startGeminiStandIn([{ shell: script.shell }, { text: script.text }], onCall);
      return api;
    },
    scratch(noRetry) {
      const dirs = geminiScratch();
      cleanups.push(dirs.cleanup);
      trustFolder(dirs.home, dirs.work);
      // Its auth type is left for `geode connect` to choose.
      const { security: _auth, ...settings } = JSON.parse(readFileSync(dirs.settings, "utf8")) as Record<
        string,
        Record<string, unknown>
      >;
      if (noRetry) settings["general"] = { ...settings["general"], maxAttempts: 1 };
      writeFileSync(dirs.settings, JSON.stringify(settings));
      return dirs;
    },
    run(dirs, vars) {
      return runGemini({
        prompt: "Say hi.",
        home: dirs.home,
        cwd: dirs.work,
        apiUrl: vars["GOOGLE_GEMINI_BASE_URL"] ?? "",
        env: vars,
        timeoutMs: 150_000,
      });
    },
    // Its result event carries the Google error's message; its log, the error's code.
    refusalShown: (message) => [
      new RegExp(`"message":"\\[API Error: cost_limit_exceeded: ${escaped(message)}`),
      /code: 429,/,
    ],
    keyHeader: "x-goog-api-key",
    keyValue: PROVIDER_KEY,
    model: "gemini-2.5-pro",
  },
  {
    agent: "copilot",
    provider: { name: "openai", kind: "openai" },
    baseUrl: (url) => `${url}/v1`,
    standIn: (script, onCall) => startChatStandIn([{ shell: script.shell }, { text: script.text }], onCall),
    scratch() {
      const dirs = scratchFolders("copilot-llm");
      cleanups.push(dirs.cleanup);
      mkdirSync(path.join(dirs.home, ".copilot"), { recursive: true });
      return dirs;
    },
    run(dirs, vars) {
      return runCopilot({
        prompt: "Say hi.",
        home: dirs.home,
        cwd: dirs.work,
        apiUrl: "http://127.0.0.1:9",
        env: vars,
        timeoutMs: 150_000,
      });
    },
    refusalShown: (message) => [new RegExp(`^429 ${escaped(message)}`, "m")],
    keyHeader: "authorization",
    keyValue: `Bearer ${PROVIDER_KEY}`,
    model: "gpt-4.1",
  },
];

/** The agent configured by what `geode connect <agent> --llm` printed, against a fresh stand-in. */
async function throughGateway(c: LlmAgentCase, script: { shell: string; text: string }, noRetry = false) {
  const seen: StandInRequest[] = [];
  const api = await c.standIn(script, (r) => {
    if (/:(stream)?generateContent|\/chat\/completions/i.test(r.url)) seen.push(r);
  });
  cleanups.push(() => api.close());
  const add = await geode([
    "llm",
    "add",
    c.provider.name,
    "--kind",
    c.provider.kind,
    "--url",
    c.baseUrl(api.url),
    "--key-env",
    KEY_ENV,
  ]);
  expect(add.code, add.err).toBe(0);
  await fx.provider({ ...c.provider, base_url: c.baseUrl(api.url) });
  const dirs = c.scratch(noRetry);
  const connect = await geode(["connect", c.agent, "--llm", c.provider.name, "--url", fx.gateway().url], {
    HOME: dirs.home,
  });
  expect(connect.code, connect.err).toBe(0);
  const vars = exported(connect.out, fx.token());
  expect(Object.values(vars)).toContain(fx.token());
  expect(connect.out).not.toContain(fx.token());
  return { seen, vars, dirs };
}

describe.each(CASES)("$agent through the LLM gateway", (c) => {
  it("runs as before, streamed through the gateway, each call recorded with its agent and cost", async () => {
    const price = await geode(["llm", "price", `${c.model.slice(0, 6)}*`, "--input", "2", "--output", "10"]);
    expect(price.code, price.err).toBe(0);
    const before = (await fx.llmEvents()).length;
    const { seen, vars, dirs } = await throughGateway(c, {
      shell: "echo through-the-gateway",
      text: "All done.",
    });
    const run = await c.run(dirs, vars);
    const shown = run.stdout + run.stderr;
    expect(run.code, shown).toBe(0);
    expect(shown).toContain("All done.");
    const calls = seen.filter((r) => r.body["tools"] !== undefined);
    expect(calls.length, shown).toBeGreaterThanOrEqual(2);
    for (const r of seen) {
      expect(r.headers?.[c.keyHeader]).toBe(c.keyValue);
      expect(JSON.stringify(r.headers)).not.toContain(fx.token());
    }
    const ended = (await fx.llmEvents()).slice(before).filter((e) => e.event === "llm_call_ended");
    expect(ended.length).toBe(seen.length);
    const sessions = new Set(ended.map((e) => e.correlation.session_id));
    expect(sessions.size).toBe(1);
    expect([...sessions][0]).toMatch(/^llm-laptop-/);
    for (const e of ended)
      expect(e.payload).toMatchObject({
        provider: c.provider.name,
        model: c.model,
        input_tokens: 12,
        output_tokens: 8,
        stream: true,
        status: 200,
        cost_usd: (12 * 2 + 8 * 10) / 1e6,
      });
    expect(shown).not.toContain(PROVIDER_KEY);
  }, 240_000);

  it("a budget of a few tokens lets the first call through; the agent shows the 429 of the next", async () => {
    // The window's counter outlives an earlier budget of the same key: the limit is 15 tokens over it.
    const setLimit = async (tokens: number) => {
      const set = await geode([
        "budget",
        "set",
        "agent.laptop",
        "--tokens",
        String(tokens),
        "--window",
        "1h",
      ]);
      expect(set.code, set.err).toBe(0);
      await new Promise((r) => setTimeout(r, 300));
    };
    await setLimit(15);
    const used = await usedTokens();
    if (used > 0) await setLimit(used + 15);
    const before = (await fx.llmEvents()).length;
    try {
      const { seen, vars, dirs } = await throughGateway(
        c,
        { shell: "echo first", text: "never reached" },
        true,
      );
      const run = await c.run(dirs, vars);
      const shown = run.stdout + run.stderr;
      expect(seen.length, shown).toBe(1);
      // The gateway's refusal, in the provider's error shape, as the agent prints it.
      for (const shows of c.refusalShown(
        `budget agent.laptop is spent (${used + 20} of ${used + 15} tokens this 1h window)`,
      ))
        expect(shown).toMatch(shows);
      expect(shown).not.toContain(PROVIDER_KEY);
      const events = (await fx.llmEvents()).slice(before);
      expect(events.filter((e) => e.event === "llm_call_ended")).toHaveLength(1);
      const refused = events.filter((e) => e.event === "cost_limit_exceeded");
      expect(refused.length).toBeGreaterThan(0);
      expect(refused[0]?.payload).toMatchObject({ budget: "agent.laptop", reason: "limit_tokens" });
    } finally {
      await (await BudgetStore.open({ nc: fx.env().nc, names: fx.env().names })).remove("agent.laptop");
    }
  }, 300_000);
});

describe("after both agents ran", () => {
  it("the provider key is in no stream, bucket or log line", async () => {
    expect((await fx.llmEvents()).filter((e) => e.event === "llm_call_ended").length).toBeGreaterThanOrEqual(
      6,
    );
    await expectProviderKeyNowhere(fx);
  });
});
