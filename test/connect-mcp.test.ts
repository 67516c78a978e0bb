/**
 * `geode connect <agent> --mcp --write …` writes a configuration each pinned agent CLI reads: run
 * headless against a scripted model stand-in, the agent connects to the MCP endpoint it names with
 * the agent token from GEODE_AGENT_TOKEN, lists its tools and offers them to the model.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { runCliCaptured } from "@geode/cli/testing";
import { afterEach, describe, expect, it } from "vitest";
import { scratchFolders } from "./agent-process-support.js";
import { startChatCompletionsStandIn } from "./chat-completions-stand-in.js";
import { runClaude, scratch, startAnthropicStandIn } from "./claude-code-support.js";
import { providerConfig, runCodex, startResponsesStandIn } from "./codex-support.js";
import { runCopilot, startChatStandIn } from "./copilot-support.js";
import { geminiScratch, runGemini, startGeminiStandIn, trustFolder } from "./gemini-support.js";
import { opencodeScratch, runOpencode } from "./opencode-support.js";
import { qwenScratch, runQwen, startQwenStandIn } from "./qwen-code-support.js";

const TOKEN = "agent-token-connect-mcp-0123456789";
const TOOL = "standin_echo";

interface McpCall {
  method: string;
  authorization: string | undefined;
}

/**
 * A stateless streamable HTTP MCP server on loopback with one tool (2025-06-18 and older; it
 * answers `server/discover` with method-not-found, so newer clients fall back to `initialize`).
 */
async function startMcpStandIn(): Promise<{ url: string; calls: McpCall[]; close(): Promise<void> }> {
  const calls: McpCall[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (raw += c));
    req.on("end", () => {
      if (req.method !== "POST") {
        res.writeHead(405).end();
        return;
      }
      const msg = JSON.parse(raw) as {
        id?: number | string;
        method: string;
        params?: Record<string, unknown>;
      };
      calls.push({ method: msg.method, authorization: req.headers.authorization });
      if (msg.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const reply = (body: Record<string, unknown>) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, ...body }));
      };
      if (msg.method === "initialize")
        return reply({
          result: {
            protocolVersion: String(msg.params?.["protocolVersion"] ?? "2025-06-18"),
            capabilities: { tools: {} },
            serverInfo: { name: "standin", version: "1.0.0" },
          },
        });
      if (msg.method === "tools/list")
        return reply({
          result: {
            tools: [
              {
                name: TOOL,
                description: "Echoes its text back.",
                inputSchema: { type: "object", properties: { text: { type: "string" } } },
                annotations: { readOnlyHint: true },
              },
            ],
          },
        });
      if (msg.method === "ping") return reply({ result: {} });
      return reply({ error: { code: -32601, message: `Method not found: ${msg.method}` } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function connectMcp(agent: string, url: string, file: string, env: Record<string, string>) {
  const r = await runCliCaptured(["connect", agent, "--mcp", "--url", url, "--write", file], {
    ...process.env,
    ...env,
  });
  expect(r.code, `${r.out}\n${r.err}`).toBe(0);
  expect(r.out).toContain(`wrote the MCP server "geode" (${url}/v1/mcp)`);
  // The token is named, never written.
  expect(readFileSync(file, "utf8")).not.toContain(TOKEN);
  return r.out;
}

/** The MCP stand-in saw the agent list tools with the agent token. */
function expectListedWithToken(calls: McpCall[]): void {
  const listed = calls.filter((c) => c.method === "tools/list");
  expect(listed.length, JSON.stringify(calls)).toBeGreaterThan(0);
  for (const c of calls) expect(c.authorization).toBe(`Bearer ${TOKEN}`);
}

describe("geode connect <agent> --mcp", () => {
  it("Codex lists the gateway's tools with the agent token", async () => {
    const mcp = await startMcpStandIn();
    cleanups.push(() => mcp.close());
    const api = await startResponsesStandIn([{ text: "Done." }]);
    cleanups.push(() => api.close());
    const dirs = scratchFolders("codex-mcp");
    cleanups.push(dirs.cleanup);
    const config = path.join(dirs.home, "config.toml");
    writeFileSync(config, providerConfig(api.url));
    await connectMcp("codex", mcp.url, config, { HOME: dirs.home, CODEX_HOME: dirs.home });
    // A second run replaces its block; the provider settings stay.
    await connectMcp("codex", mcp.url, config, { HOME: dirs.home, CODEX_HOME: dirs.home });
    expect(readFileSync(config, "utf8").match(/\[mcp_servers\.geode\]/g)).toHaveLength(1);
    const run = await runCodex({
      prompt: "Say done.",
      home: dirs.home,
      cwd: dirs.work,
      env: { GEODE_AGENT_TOKEN: TOKEN },
    });
    expect(run.code, run.stderr).toBe(0);
    expectListedWithToken(mcp.calls);
    expect(api.requests[0]?.raw).toContain(TOOL);
  }, 120_000);

  it("Gemini CLI lists the gateway's tools with the agent token", async () => {
    const mcp = await startMcpStandIn();
    cleanups.push(() => mcp.close());
    const api = await startGeminiStandIn([{ text: "Done." }]);
    cleanups.push(() => api.close());
    const dirs = geminiScratch();
    cleanups.push(dirs.cleanup);
    trustFolder(dirs.home, dirs.work);
    await connectMcp("gemini-cli", mcp.url, dirs.settings, { HOME: dirs.home });
    const settings = JSON.parse(readFileSync(dirs.settings, "utf8")) as Record<string, unknown>;
    // What was there stays.
    expect(settings["security"]).toEqual({ auth: { selectedType: "gemini-api-key" } });
    const run = await runGemini({
      prompt: "Say done.",
      home: dirs.home,
      cwd: dirs.work,
      apiUrl: api.url,
      env: { GEODE_AGENT_TOKEN: TOKEN },
    });
    expect(run.code, run.stderr).toBe(0);
    expectListedWithToken(mcp.calls);
    expect(api.requests[0]?.raw).toContain(`mcp_geode_${TOOL}`);
  }, 120_000);

  it("Claude Code lists the gateway's tools with the agent token", async () => {
    const mcp = await startMcpStandIn();
    cleanups.push(() => mcp.close());
    const api = await startAnthropicStandIn([{ text: "Done." }]);
    cleanups.push(() => api.close());
    const dirs = scratch();
    cleanups.push(dirs.cleanup);
    const file = path.join(dirs.home, ".claude", "geode-mcp.json");
    const out = await connectMcp("claude-code", mcp.url, file, { HOME: dirs.home });
    expect(out).toContain(`--mcp-config ${file} --allowedTools mcp__geode`);
    const settingsFile = path.join(dirs.home, "settings.json");
    writeFileSync(settingsFile, "{}");
    const run = await runClaude({
      prompt: "Say done.",
      settingsFile,
      apiUrl: api.url,
      home: dirs.home,
      cwd: dirs.work,
      token: TOKEN,
      args: ["--mcp-config", file, "--strict-mcp-config", "--allowedTools", "mcp__geode"],
      env: { ENABLE_TOOL_SEARCH: "false" },
    });
    expect(run.code, run.stderr).toBe(0);
    expectListedWithToken(mcp.calls);
    expect(api.requests.some((r) => r.raw.includes(`mcp__geode__${TOOL}`))).toBe(true);
  }, 120_000);

  it("Copilot CLI lists the gateway's tools with the agent token", async () => {
    const mcp = await startMcpStandIn();
    cleanups.push(() => mcp.close());
    const api = await startChatStandIn([{ text: "Done." }]);
    cleanups.push(() => api.close());
    const dirs = scratchFolders("copilot-mcp");
    cleanups.push(dirs.cleanup);
    mkdirSync(path.join(dirs.home, ".copilot"), { recursive: true });
    const file = path.join(dirs.home, ".copilot", "mcp-config.json");
    const out = await connectMcp("copilot", mcp.url, file, { HOME: dirs.home });
    expect(out).toContain("--allow-tool=geode");
    const run = await runCopilot({
      prompt: "Say done.",
      home: dirs.home,
      cwd: dirs.work,
      apiUrl: api.url,
      env: { GEODE_AGENT_TOKEN: TOKEN },
      args: ["--additional-mcp-config", `@${file}`, "--allow-tool=geode"],
    });
    expect(run.code, run.stderr).toBe(0);
    expectListedWithToken(mcp.calls);
    expect(api.requests.some((r) => r.raw.includes(TOOL))).toBe(true);
  }, 120_000);

  it("Qwen Code lists the gateway's tools with the agent token, and asks no one before them", async () => {
    const mcp = await startMcpStandIn();
    cleanups.push(() => mcp.close());
    const api = await startQwenStandIn([{ text: "Done." }]);
    cleanups.push(() => api.close());
    const dirs = qwenScratch();
    cleanups.push(dirs.cleanup);
    const out = await connectMcp("qwen-code", mcp.url, dirs.settings, { HOME: dirs.home });
    expect(out).toContain(`mcp__geode__<tool>`);
    const settings = JSON.parse(readFileSync(dirs.settings, "utf8")) as Record<string, unknown>;
    // What was there stays.
    expect(settings["security"]).toEqual({ auth: { selectedType: "openai" } });
    const run = await runQwen({
      prompt: "Say done.",
      home: dirs.home,
      cwd: dirs.work,
      apiUrl: api.url,
      sessionId: randomUUID(),
      env: { GEODE_AGENT_TOKEN: TOKEN },
      args: [],
    });
    expect(run.code, run.stderr).toBe(0);
    expectListedWithToken(mcp.calls);
    expect(api.requests[0]?.raw).toContain(`mcp__geode__${TOOL}`);
    // --bare and --safe-mode start no MCP server from the settings: such a run has no gateway tools.
    for (const flag of ["--bare", "--safe-mode"]) {
      const before = mcp.calls.length;
      const off = await runQwen({
        prompt: "Say done.",
        home: dirs.home,
        cwd: dirs.work,
        apiUrl: api.url,
        sessionId: randomUUID(),
        env: { GEODE_AGENT_TOKEN: TOKEN },
        args: [flag],
      });
      expect(off.code, off.stderr).toBe(0);
      expect(mcp.calls.length, flag).toBe(before);
      expect(api.requests.at(-1)?.raw).not.toContain(`mcp__geode__${TOOL}`);
    }
  }, 180_000);

  it("opencode lists the gateway's tools with the agent token", async () => {
    const mcp = await startMcpStandIn();
    cleanups.push(() => mcp.close());
    const api = await startChatCompletionsStandIn([{ text: "Done." }]);
    cleanups.push(() => api.close());
    const dirs = opencodeScratch(api.url);
    cleanups.push(dirs.cleanup);
    const r = await runCliCaptured(["connect", "opencode", "--mcp", "--url", mcp.url], {
      ...process.env,
      HOME: dirs.home,
    });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`into ${dirs.config}`);
    const config = JSON.parse(readFileSync(dirs.config, "utf8")) as Record<string, unknown>;
    expect(Object.keys(config["provider"] as object)).toEqual(["standin"]);
    expect(readFileSync(dirs.config, "utf8")).not.toContain(TOKEN);
    const run = await runOpencode({
      prompt: "Say done.",
      home: dirs.home,
      cwd: dirs.work,
      env: { GEODE_AGENT_TOKEN: TOKEN },
    });
    expect(run.code, run.stderr).toBe(0);
    expectListedWithToken(mcp.calls);
    expect(api.requests[0]?.raw).toContain(`geode_${TOOL}`);
    // --pure drops plugins, not MCP servers: the gateway's tools are still offered.
    const listedBefore = mcp.calls.filter((c) => c.method === "tools/list").length;
    const pure = await runOpencode({
      prompt: "Say done.",
      home: dirs.home,
      cwd: dirs.work,
      env: { GEODE_AGENT_TOKEN: TOKEN },
      args: ["--pure"],
    });
    expect(pure.code, pure.stderr).toBe(0);
    expect(mcp.calls.filter((c) => c.method === "tools/list").length).toBeGreaterThan(listedBefore);
    expect(api.requests.at(-1)?.raw).toContain(`geode_${TOOL}`);
  }, 180_000);

  it("refuses a config it cannot keep, writing nothing", async () => {
    const dirs = scratchFolders("mcp-bad");
    cleanups.push(dirs.cleanup);
    const file = path.join(dirs.home, "settings.json");
    writeFileSync(file, "[1, 2]");
    const r = await runCliCaptured(["connect", "gemini-cli", "--mcp", "--write", file], process.env);
    expect(r.code).toBe(1);
    expect(r.err).toContain("does not hold a JSON object; nothing written");
    expect(readFileSync(file, "utf8")).toBe("[1, 2]");
  });
});
