/**
 * `geode connect <agent> --mcp --check` against a real gateway: the configuration connect wrote,
 * the gateway's health and the token, and the tools the agent will list (an MCP-origin tool
 * registered in `{ns}_tools` here, the mcp-bridge's job).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensureBucket } from "@geode/bus";
import { runCliCaptured } from "@geode/cli/testing";
import type { ToolDefinition } from "@geode/contracts";
import { serveTool } from "@geode/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGatewayFixture } from "./gateway-support.js";

const fx = useGatewayFixture();
const stops: Array<() => Promise<void> | void> = [];
let dir = "";

const TOOL: ToolDefinition = {
  name: "docs_echo",
  description: "echo of docs",
  input_schema: { type: "object", properties: { text: { type: "string" } } },
  effect: "read",
  requires_approval: false,
  mcp: { server: "docs", tool: "echo", annotations: { readOnlyHint: true } },
};

beforeAll(async () => {
  const { nc, names } = fx.env();
  dir = mkdtempSync(path.join(tmpdir(), "geode-mcp-check-"));
  const kv = await ensureBucket(nc, names, "mcpServers");
  await kv.put(
    "docs",
    JSON.stringify({
      name: "docs",
      transport: "stdio",
      command: "true",
      created_at: Date.now(),
      updated_by: "test",
    }),
  );
  const served = await serveTool({ nc, names }, TOOL, () => ({ result: { content: [] } }));
  stops.push(() => served.close());
});

afterAll(async () => {
  for (const s of stops) await s();
  rmSync(dir, { recursive: true, force: true });
});

const geode = (args: string[], token = fx.token()) =>
  runCliCaptured(args, { ...process.env, ...fx.env().env, HOME: dir, GEODE_AGENT_TOKEN: token });

async function written(agent: string, file: string, url = fx.gateway().url): Promise<string> {
  const r = await geode(["connect", agent, "--mcp", "--url", url, "--write", file]);
  expect(r.code, r.err).toBe(0);
  return file;
}

const EXPECTED: Record<string, string> = {
  "claude-code": "mcp__geode__docs_echo",
  codex: "docs_echo",
  "gemini-cli": "mcp_geode_docs_echo",
  copilot: "geode-docs_echo",
  "qwen-code": "mcp__geode__docs_echo",
  opencode: "geode_docs_echo",
};

/** Where each agent's configuration is written: a file the agent reads with HOME = `dir`. */
const fileOf = (agent: string): string =>
  agent === "qwen-code"
    ? path.join(dir, ".qwen", "settings.json")
    : agent === "opencode"
      ? path.join(dir, ".config", "opencode", "opencode.json")
      : path.join(dir, `${agent}.${agent === "codex" ? "toml" : "json"}`);

describe("geode connect <agent> --mcp --check", () => {
  it("passes for each agent with the config connect wrote and a known token, naming the tools as the agent does", async () => {
    for (const [agent, name] of Object.entries(EXPECTED)) {
      const file = fileOf(agent);
      if (agent === "codex") writeFileSync(file, 'approval_policy = "never"\n');
      await written(agent, file);
      const r = await geode(["connect", agent, "--mcp", "--check", "--write", file]);
      expect(r.code, `${agent}: ${r.err}`).toBe(0);
      expect(r.out).toMatch(/^ok: .* reads the MCP server "geode" .*lists 1 tools/);
      expect(r.out).toContain(`  ${name}\n`);
    }
  });

  it("names the agent's settings that make it ask: Codex without approval_policy = never fails", async () => {
    const file = await written("codex", path.join(dir, "ask.toml"));
    const r = await geode(["connect", "codex", "--mcp", "--check", "--write", file]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('set approval_policy = "never"');
    const cc = await geode([
      "connect",
      "claude-code",
      "--mcp",
      "--check",
      "--write",
      path.join(dir, "claude-code.json"),
    ]);
    expect(cc.out).toContain("--allowedTools mcp__geode");
    expect(cc.out).toContain("ENABLE_TOOL_SEARCH=false");
  });

  it("fails with one line for an unknown token", async () => {
    for (const agent of ["claude-code", "qwen-code", "opencode"]) {
      const file = await written(
        agent,
        agent === "claude-code" ? path.join(dir, "token.json") : fileOf(agent),
      );
      const r = await geode(
        ["connect", agent, "--mcp", "--check", "--write", file],
        "geode_not-a-known-token",
      );
      expect(r.code, agent).toBe(1);
      expect(r.err).toBe(
        "the gateway does not know the token in GEODE_AGENT_TOKEN (geode agents ls; geode agents add NAME)\n",
      );
    }
  });

  it("Qwen Code: fails for settings it does not read, a literal token, an untrusted server", async () => {
    const elsewhere = await written("qwen-code", path.join(dir, "qwen-elsewhere.json"));
    const r = await geode(["connect", "qwen-code", "--mcp", "--check", "--write", elsewhere]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`does not read ${elsewhere} (it reads ${fileOf("qwen-code")},`);
    const file = await written("qwen-code", fileOf("qwen-code"));
    const good = readFileSync(file, "utf8");
    const edit = async (change: (entry: Record<string, unknown>) => void) => {
      const settings = JSON.parse(good);
      change(settings.mcpServers.geode);
      writeFileSync(file, JSON.stringify(settings));
      return geode(["connect", "qwen-code", "--mcp", "--check"]);
    };
    const literal = await edit((e) => {
      e["headers"] = { Authorization: `Bearer ${fx.token()}` };
    });
    expect(literal.code).toBe(1);
    expect(literal.err).toContain(
      "does not send the token from GEODE_AGENT_TOKEN the way Qwen Code expands it",
    );
    const untrusted = await edit((e) => {
      e["trust"] = false;
    });
    expect(untrusted.code).toBe(1);
    expect(untrusted.err).toContain(
      "does not trust the geode server: Qwen Code asks before each of its tools",
    );
    const excluded = await edit((e) => {
      e["excludeTools"] = ["docs_echo"];
    });
    expect(excluded.code).toBe(1);
    expect(excluded.err).toContain("Qwen Code hides every tool of the gateway: docs_echo is in excludeTools");
    writeFileSync(file, good);
    const safe = await runCliCaptured(["connect", "qwen-code", "--mcp", "--check"], {
      ...process.env,
      ...fx.env().env,
      HOME: dir,
      GEODE_AGENT_TOKEN: fx.token(),
      QWEN_CODE_SAFE_MODE: "1",
    });
    expect(safe.code).toBe(1);
    expect(safe.err).toBe("QWEN_CODE_SAFE_MODE is set: Qwen Code starts no MCP server\n");
  });

  it("opencode: fails for a config it does not read, no entry, an install that waits on the network, an ask rule", async () => {
    const named = await written("opencode", path.join(dir, "opencode-mcp.json"));
    const r = await geode(["connect", "opencode", "--mcp", "--check", "--write", named]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      "opencode reads no config file named opencode-mcp.json (only opencode.json or opencode.jsonc)\n",
    );
    const file = await written("opencode", fileOf("opencode"));
    const good = readFileSync(file, "utf8");
    writeFileSync(file, JSON.stringify({ ...JSON.parse(good), mcp: {} }));
    const none = await geode(["connect", "opencode", "--mcp", "--check"]);
    expect(none.code).toBe(1);
    expect(none.err).toBe(
      `${file} has no MCP server "geode": run geode connect opencode --mcp --write ${file}\n`,
    );
    writeFileSync(
      file,
      JSON.stringify({ ...JSON.parse(good), permission: { "*": "allow", "geode_*": "ask" } }),
    );
    const asks = await geode(["connect", "opencode", "--mcp", "--check"]);
    expect(asks.code).toBe(1);
    expect(asks.err).toContain(
      'opencode hides every tool of the gateway: docs_echo is under a permission rule "ask"',
    );
    writeFileSync(file, good);
    rmSync(path.join(path.dirname(file), "package-lock.json"));
    const online = await geode(["connect", "opencode", "--mcp", "--check"]);
    expect(online.code).toBe(1);
    expect(online.err).toContain("opencode npm-installs @opencode-ai/plugin into");
    await written("opencode", file);
    const ok = await geode(["connect", "opencode", "--mcp", "--check"]);
    expect(ok.code, ok.err).toBe(0);
  });

  it("fails for a config without the geode server, or one that never expands the token", async () => {
    const file = path.join(dir, "other.json");
    writeFileSync(file, JSON.stringify({ mcpServers: { other: { type: "http", url: "http://x/" } } }));
    const r = await geode(["connect", "copilot", "--mcp", "--check", "--write", file]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `${file} has no MCP server "geode": run geode connect copilot --mcp --write ${file}\n`,
    );
    const literal = await written("gemini-cli", path.join(dir, "literal.json"));
    const settings = JSON.parse(readFileSync(literal, "utf8"));
    settings.mcpServers.geode.headers.Authorization = `Bearer ${fx.token()}`;
    writeFileSync(literal, JSON.stringify(settings));
    const l = await geode(["connect", "gemini-cli", "--mcp", "--check", "--write", literal]);
    expect(l.code).toBe(1);
    expect(l.err).toContain("does not send the token from GEODE_AGENT_TOKEN");
  });

  it("fails when the gateway is down", async () => {
    const file = await written("copilot", path.join(dir, "down.json"), "http://127.0.0.1:9");
    const r = await geode(["connect", "copilot", "--mcp", "--check", "--write", file]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^the agent gateway at http:\/\/127\.0\.0\.1:9 cannot be reached .*: start it/);
  });
});
