/**
 * The pinned Qwen Code and opencode, headless, with their model calls pointed at the agent gateway
 * by `geode connect <agent> --llm openai` (Qwen Code: the shell lines it prints, sourced; opencode:
 * the provider it writes into `opencode.json`): the gateway fronts the scripted Chat Completions
 * stand-in, which plays OpenAI. The run works as before, streamed; each model call is recorded
 * with the agent and its cost; the provider key stays out of everything the agent sees and the
 * plane keeps.
 */
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type AgentProcess, jsonLines, scratchFolders } from "./agent-process-support.js";
import { type ChatTurn, startChatCompletionsStandIn } from "./chat-completions-stand-in.js";
import { KEY_ENV, PROVIDER_KEY, useLlmFixture } from "./llm-support.js";
import { bashTurn, runOpencode } from "./opencode-support.js";
import { runQwen } from "./qwen-code-support.js";

const fx = useLlmFixture();
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});
const { geode } = fx;

const QWEN_MODEL = "qwen3-coder-standin";
const OPENCODE_MODEL = "gpt-4.1";

/** The variables a shell gets from sourcing `file` (the agent token in its variable). */
function sourced(file: string, names: string[]): Promise<Record<string, string>> {
  const script = `. '${file}'; ${names.map((n) => `printf '%s\\0' "$${n}"`).join("; ")}`;
  return new Promise((resolve, reject) =>
    execFile("bash", ["-c", script], { env: { GEODE_AGENT_TOKEN: fx.token() } }, (error, stdout) => {
      if (error) return reject(error);
      const values = stdout.split("\0");
      resolve(Object.fromEntries(names.map((n, i) => [n, values[i] ?? ""])));
    }),
  );
}

interface Agent {
  name: "qwen-code" | "opencode";
  shell(command: string): ChatTurn;
  /** Connects the agent in a fresh HOME (nothing but what `connect --llm` gives it) and runs it once. */
  run(prompt: string): Promise<AgentProcess>;
  /** The text of its last answer. */
  answer(run: AgentProcess): string;
}

/** Qwen Code in a HOME with no settings: only the sourced lines tell it its provider, key and model. */
const qwen: Agent = {
  name: "qwen-code",
  shell: (command) => ({ call: { name: "run_shell_command", arguments: { command } } }),
  async run(prompt) {
    const dirs = scratchFolders("qwen-code-llm");
    cleanups.push(dirs.cleanup);
    const file = path.join(dirs.home, "geode-llm.sh");
    const connect = await geode([
      "connect",
      "qwen-code",
      "--llm",
      "openai",
      "--url",
      fx.gateway().url,
      "--write",
      file,
    ]);
    expect(connect.code, connect.err).toBe(0);
    const vars = await sourced(file, ["OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"]);
    expect(vars).toEqual({
      OPENAI_BASE_URL: `${fx.gateway().url}/v1/llm/openai`,
      OPENAI_API_KEY: fx.token(),
      OPENAI_MODEL: QWEN_MODEL,
    });
    return runQwen({
      prompt,
      home: dirs.home,
      cwd: dirs.work,
      apiUrl: "http://127.0.0.1:9",
      sessionId: crypto.randomUUID(),
      env: vars,
      timeoutMs: 150_000,
    });
  },
  answer: (run) => String(jsonLines(run.stdout).find((l) => l["type"] === "result")?.["result"] ?? ""),
};

/** opencode with a user config that allows its tools; `connect --llm` adds the provider. */
const opencode: Agent = {
  name: "opencode",
  shell: (command) => bashTurn(command),
  async run(prompt) {
    const dirs = scratchFolders("opencode-llm");
    cleanups.push(dirs.cleanup);
    const dir = path.join(dirs.home, ".config", "opencode");
    mkdirSync(dir, { recursive: true });
    const config = path.join(dir, "opencode.json");
    writeFileSync(config, JSON.stringify({ permission: { bash: "allow", edit: "allow" } }));
    const connect = await geode(["connect", "opencode", "--llm", "openai", "--url", fx.gateway().url], {
      HOME: dirs.home,
    });
    expect(connect.code, connect.err).toBe(0);
    return runOpencode({
      prompt,
      home: dirs.home,
      cwd: dirs.work,
      model: `geode-openai/${OPENCODE_MODEL}`,
      env: { GEODE_AGENT_TOKEN: fx.token() },
      timeoutMs: 150_000,
    });
  },
  answer: (run) =>
    jsonLines(run.stdout)
      .filter((l) => l["type"] === "text")
      .map((l) => String((l["part"] as { text?: string }).text ?? ""))
      .join(""),
};

/** The stand-in as provider `openai` (models listed, so `connect` can name them), fronted by the gateway. */
async function provider(script: ChatTurn[]) {
  const api = await startChatCompletionsStandIn(script);
  cleanups.push(() => api.close());
  const models = [QWEN_MODEL, OPENCODE_MODEL];
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
    ...models.flatMap((m) => ["--model", m]),
  ]);
  expect(add.code, add.err).toBe(0);
  await fx.provider({ name: "openai", kind: "openai", base_url: `${api.url}/v1`, models });
  return api;
}

/** Nothing the agent printed, the plane logged or recorded holds the provider key. */
async function expectNoKey(run: AgentProcess) {
  expect(run.stdout + run.stderr).not.toContain(PROVIDER_KEY);
  expect(JSON.stringify(fx.logLines)).not.toContain(PROVIDER_KEY);
  expect(JSON.stringify(await fx.llmEvents())).not.toContain(PROVIDER_KEY);
}

describe.each([qwen, opencode])("$name through the LLM gateway", (agent) => {
  it("runs as before, streamed through the gateway, each call recorded with its agent and cost", async () => {
    const price = await geode(["llm", "price", "*standin*", "--input", "2", "--output", "10"]);
    expect(price.code, price.err).toBe(0);
    const price2 = await geode(["llm", "price", "gpt-4.1", "--input", "2", "--output", "10"]);
    expect(price2.code, price2.err).toBe(0);
    const before = (await fx.llmEvents()).length;
    const api = await provider([agent.shell("echo through-the-gateway"), { text: "All done." }]);
    const run = await agent.run("Say hi.");
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(agent.answer(run)).toContain("All done.");
    expect(run.stdout).toContain("through-the-gateway");
    const calls = api.all.filter((r) => r.url.startsWith("/v1/chat/completions"));
    expect(api.requests.length).toBe(2);
    for (const r of calls) {
      expect(r.headers?.["authorization"]).toBe(`Bearer ${PROVIDER_KEY}`);
      expect(r.body["stream"]).toBe(true);
    }
    const events = (await fx.llmEvents()).slice(before);
    const ended = events.filter((e) => e.event === "llm_call_ended");
    expect(events.filter((e) => e.event === "llm_call_started")).toHaveLength(calls.length);
    expect(ended).toHaveLength(calls.length);
    const sessions = new Set(ended.map((e) => e.correlation.session_id));
    expect(sessions.size).toBe(1);
    expect([...sessions][0]).toMatch(/^llm-laptop-/);
    for (const e of ended)
      expect(e.payload).toMatchObject({
        provider: "openai",
        model: agent === qwen ? QWEN_MODEL : OPENCODE_MODEL,
        input_tokens: 12,
        output_tokens: 8,
        stream: true,
        status: 200,
        cost_usd: (12 * 2 + 8 * 10) / 1e6,
      });
    await expectNoKey(run);
  }, 240_000);
});
