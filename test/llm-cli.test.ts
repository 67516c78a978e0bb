/**
 * `geode llm add|ls|rm|price`, `geode budget set|ls|rm` and `geode connect <agent> --llm` (DESIGN
 * section 21) run as users run them: the compiled `geode` against a real NATS, the records read
 * back from KV as the agent-gateway reads them.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ensureBucket } from "@geode/bus";
import { BudgetRecordSchema, LlmProviderRecordSchema } from "@geode/contracts";
import { useTestEnv } from "@geode/testing";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { geodeProcess } from "./agent-process-support.js";

const env = useTestEnv();

/** Runs `geode <args>` to its end, as the operator ops-alice. */
const geode = (args: string[], extra: Record<string, string> = {}) =>
  geodeProcess(args, { env: { ...process.env, ...env().env, GEODE_OPERATOR: "ops-alice", ...extra } });

async function stored(bucket: "llmProviders" | "budgets", key: string): Promise<unknown> {
  const kv = await ensureBucket(env().nc, env().names, bucket);
  const entry = await kv.get(key);
  return entry?.operation === "PUT" ? entry.json() : null;
}

describe("geode llm", () => {
  it("adds a provider with the key's variable name only, lists, prices and removes it", async () => {
    const add = await geode([
      "llm",
      "add",
      "openai",
      "--kind",
      "openai",
      "--url",
      "https://api.openai.com/v1/",
      "--key-env",
      "OPENAI_API_KEY",
      "--model",
      "gpt-5*",
    ]);
    expect(add.code, add.err).toBe(0);
    expect(add.out).toContain("/v1/llm/openai");
    const record = LlmProviderRecordSchema.parse(await stored("llmProviders", "openai"));
    expect(record).toMatchObject({
      kind: "openai",
      base_url: "https://api.openai.com/v1",
      key_env: "OPENAI_API_KEY",
      models: ["gpt-5*"],
      updated_by: "ops-alice",
    });
    const price = await geode([
      "llm",
      "price",
      "gpt-5*",
      "--input",
      "1.25",
      "--output",
      "10",
      "--cached",
      "0.125",
    ]);
    expect(price.code, price.err).toBe(0);
    const ls = await geode(["llm", "ls", "--json"]);
    expect(JSON.parse(ls.out)).toMatchObject({
      providers: [{ name: "openai" }],
      prices: [{ model: "gpt-5*", input: 1.25, output: 10, cached: 0.125 }],
    });
    expect((await geode(["llm", "ls"])).out).toContain("$OPENAI_API_KEY");
    expect((await geode(["llm", "rm", "openai"])).code).toBe(0);
    expect(await stored("llmProviders", "openai")).toBeNull();
    const again = await geode(["llm", "rm", "openai"]);
    expect(again.code).toBe(1);
    expect(again.err).toContain("no LLM provider openai");
  });

  it("refuses a key given where its variable's name goes, a bad kind or URL, bad prices: nothing written", async () => {
    const addOops = (kind: string, url: string, keyEnv: string) =>
      geode(["llm", "add", "oops", "--kind", kind, "--url", url, "--key-env", keyEnv]);
    const key = await addOops("openai", "https://x.example/v1", "sk-live-abcdef");
    expect(key.code).not.toBe(0);
    expect(key.err).toContain("not the key itself");
    expect(key.err).not.toContain("sk-live-abcdef");
    const kind = await addOops("mistral", "https://x.example", "K");
    expect(kind.code).not.toBe(0);
    expect(kind.err).toContain("kind");
    const url = await addOops("openai", "https://user:pw@x.example", "K");
    expect(url.code).not.toBe(0);
    expect(url.err).toContain("base_url");
    expect(await stored("llmProviders", "oops")).toBeNull();
    const price = await geode(["llm", "price", "gpt-5", "--input", "-1", "--output", "2"]);
    expect(price.code).not.toBe(0);
    expect(price.err).toContain("--input");
  });
});

describe("geode budget", () => {
  it("sets, lists with use, and removes budgets; refuses bad ones", async () => {
    const set = await geode([
      "budget",
      "set",
      "group.devs",
      "--usd",
      "50",
      "--window",
      "30d",
      "--soft",
      "90",
      "--rpm",
      "120",
    ]);
    expect(set.code, set.err).toBe(0);
    expect(BudgetRecordSchema.parse(await stored("budgets", "group.devs"))).toMatchObject({
      limit_usd: 50,
      window: "30d",
      soft_percent: 90,
      requests_per_minute: 120,
    });
    const session = await geode(["budget", "set", "session.abc-123", "--tokens", "5000"]);
    expect(session.code, session.err).toBe(0);
    expect(await stored("budgets", "session.abc-123")).toMatchObject({
      window: "session",
      limit_tokens: 5000,
    });
    const ls = JSON.parse((await geode(["budget", "ls", "--json"])).out) as Array<{
      key: string;
      used: unknown;
    }>;
    expect(ls.map((r) => r.key)).toEqual(["group.devs", "session.abc-123"]);
    expect(ls[0]?.used).toEqual({ usd: 0, tokens: 0, calls: 0 });
    for (const bad of [
      ["budget", "set", "team.x", "--usd", "1"],
      ["budget", "set", "agent.laptop"],
      ["budget", "set", "agent.laptop", "--usd", "ten"],
      ["budget", "set", "agent.laptop", "--usd", "1", "--window", "1w"],
    ]) {
      const r = await geode(bad);
      expect(r.code, bad.join(" ")).not.toBe(0);
    }
    expect(await stored("budgets", "agent.laptop")).toBeNull();
    expect((await geode(["budget", "rm", "group.devs"])).code).toBe(0);
    expect(await stored("budgets", "group.devs")).toBeNull();
  });
});

describe("geode connect <agent> --llm", () => {
  it("writes or prints each agent's base URL with the agent token's variable as its key", async () => {
    expect(
      (
        await geode([
          "llm",
          "add",
          "claude",
          "--kind",
          "anthropic",
          "--url",
          "https://api.anthropic.com",
          "--key-env",
          "ANTHROPIC_API_KEY",
        ])
      ).code,
    ).toBe(0);
    expect(
      (
        await geode([
          "llm",
          "add",
          "gpt",
          "--kind",
          "openai",
          "--url",
          "https://api.openai.com/v1",
          "--key-env",
          "OPENAI_API_KEY",
          "--model",
          "gpt-5*",
          "--model",
          "gpt-4.1",
        ])
      ).code,
    ).toBe(0);
    expect(
      (
        await geode([
          "llm",
          "add",
          "goog",
          "--kind",
          "gemini",
          "--url",
          "https://generativelanguage.googleapis.com",
          "--key-env",
          "GEMINI_KEY",
        ])
      ).code,
    ).toBe(0);
    const dir = mkdtempSync(path.join(os.tmpdir(), "geode-connect-llm-"));
    const gw = "http://127.0.0.1:4280";

    const claude = path.join(dir, "claude.json");
    writeFileSync(claude, JSON.stringify({ env: { FOO: "1" }, hooks: { Stop: [] } }));
    expect(
      (await geode(["connect", "claude-code", "--llm", "claude", "--url", gw, "--write", claude])).code,
    ).toBe(0);
    expect(JSON.parse(readFileSync(claude, "utf8"))).toEqual({
      env: { FOO: "1", ANTHROPIC_BASE_URL: `${gw}/v1/llm/claude` },
      hooks: { Stop: [] },
      apiKeyHelper: 'printf %s "$GEODE_AGENT_TOKEN"',
    });

    const codex = path.join(dir, "config.toml");
    writeFileSync(codex, 'model = "gpt-5"\nmodel_provider = "openai"\n\n[mcp_servers.x]\nurl = "http://x"\n');
    expect((await geode(["connect", "codex", "--llm", "gpt", "--url", gw, "--write", codex])).code).toBe(0);
    expect((await geode(["connect", "codex", "--llm", "gpt", "--url", gw, "--write", codex])).code).toBe(0);
    const toml = parse(readFileSync(codex, "utf8")) as Record<
      string,
      Record<string, Record<string, unknown>>
    >;
    expect(toml["model_provider"]).toBe("geode-gpt");
    expect(toml["model_providers"]?.["geode-gpt"]).toEqual({
      name: "geode (gpt)",
      base_url: `${gw}/v1/llm/gpt`,
      env_key: "GEODE_AGENT_TOKEN",
      wire_api: "responses",
      // After the gateway's 429 Codex would wait Retry-After (a budget's window end) and resend.
      request_max_retries: 0,
      stream_max_retries: 0,
    });
    expect(toml["mcp_servers"]?.["x"]).toEqual({ url: "http://x" });
    // Retry settings a person raised in the block are kept when connect runs again.
    writeFileSync(
      codex,
      readFileSync(codex, "utf8").replace("stream_max_retries = 0", "stream_max_retries = 3"),
    );
    expect((await geode(["connect", "codex", "--llm", "gpt", "--url", gw, "--write", codex])).code).toBe(0);
    const again = parse(readFileSync(codex, "utf8")) as typeof toml;
    expect(again["model_providers"]?.["geode-gpt"]).toMatchObject({
      request_max_retries: 0,
      stream_max_retries: 3,
    });

    const opencode = path.join(dir, "opencode.json");
    expect(
      (await geode(["connect", "opencode", "--llm", "gpt", "--url", gw, "--write", opencode])).code,
    ).toBe(0);
    expect(JSON.parse(readFileSync(opencode, "utf8")).provider["geode-gpt"].options).toEqual({
      baseURL: `${gw}/v1/llm/gpt`,
      apiKey: "{env:GEODE_AGENT_TOKEN}",
    });
    // Only the literal model ids: opencode refuses a model its provider does not list.
    expect(JSON.parse(readFileSync(opencode, "utf8")).provider["geode-gpt"].models).toEqual({
      "gpt-4.1": { name: "gpt-4.1" },
    });

    // Gemini CLI also needs its key auth chosen in its settings (kept otherwise as they were).
    const geminiSettings = path.join(dir, ".gemini", "settings.json");
    const gemini = await geode(["connect", "gemini-cli", "--llm", "goog", "--url", gw], { HOME: dir });
    expect(gemini.out).toBe(
      `export GOOGLE_GEMINI_BASE_URL='${gw}/v1/llm/goog'\nexport GEMINI_API_KEY="$GEODE_AGENT_TOKEN"\n`,
    );
    expect(JSON.parse(readFileSync(geminiSettings, "utf8"))).toEqual({
      security: { auth: { selectedType: "gemini-api-key" } },
    });
    writeFileSync(
      geminiSettings,
      JSON.stringify({ general: { x: 1 }, security: { auth: { useExternal: false } } }),
    );
    expect((await geode(["connect", "gemini-cli", "--llm", "goog", "--url", gw], { HOME: dir })).code).toBe(
      0,
    );
    expect(JSON.parse(readFileSync(geminiSettings, "utf8"))).toEqual({
      general: { x: 1 },
      security: { auth: { useExternal: false, selectedType: "gemini-api-key" } },
    });
    const copilot = await geode(["connect", "copilot", "--llm", "claude", "--url", gw]);
    expect(copilot.out).toContain("export COPILOT_PROVIDER_TYPE='anthropic'");
    // No model id that is not a glob: Copilot's model is left to its --model.
    expect(copilot.out).not.toContain("COPILOT_MODEL");
    const copilotGpt = await geode(["connect", "copilot", "--llm", "gpt", "--url", gw]);
    expect(copilotGpt.out).toBe(
      `export COPILOT_PROVIDER_BASE_URL='${gw}/v1/llm/gpt'\nexport COPILOT_PROVIDER_TYPE='openai'\nexport COPILOT_PROVIDER_API_KEY="$GEODE_AGENT_TOKEN"\nexport COPILOT_MODEL='gpt-4.1'\n`,
    );
    const qwen = await geode(["connect", "qwen-code", "--llm", "gpt", "--url", gw]);
    expect(qwen.out).toBe(
      `export OPENAI_BASE_URL='${gw}/v1/llm/gpt'\nexport OPENAI_API_KEY="$GEODE_AGENT_TOKEN"\nexport OPENAI_MODEL='gpt-4.1'\n`,
    );

    const wrongKind = await geode(["connect", "codex", "--llm", "claude", "--url", gw, "--write", codex]);
    expect(wrongKind.code).toBe(1);
    expect(wrongKind.err).toContain("Codex speaks openai");
    const unknown = await geode(["connect", "codex", "--llm", "nope", "--url", gw, "--write", codex]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain("no LLM provider nope");
    // Fifteen runs of the compiled CLI on a loaded machine.
  }, 120_000);
});
