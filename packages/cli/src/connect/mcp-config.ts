import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "@geode/service";
import { parse } from "smol-toml";
import { type CommandIO, UsageError } from "../command.js";
import { hookEndpoint, type McpAgent } from "../commands/hook-shim.js";
import { writeAtomically, writeMergedJson } from "./config-file.js";
import { TOKEN_ENV } from "./hook-command.js";
import { makeInstallOffline, startInstallDirs, userConfigDir } from "./opencode-config.js";
import { qwenUserSettings } from "./qwen-code-settings.js";

/** The MCP server name every agent is given for the gateway (its tools: `mcp__geode__…`, `geode-…`). */
const MCP_SERVER = "geode";
/** The gateway's MCP endpoint path (DESIGN section 19). */
const MCP_PATH = "/v1/mcp";

const CODEX_BEGIN =
  "# >>> geode connect codex --mcp: the agent gateway as an MCP server (rewritten by geode)";
const CODEX_END = "# <<< geode connect codex --mcp";

/** What `geode connect <agent> --mcp` writes for one agent, and how that agent is then run. */
interface McpTarget {
  /** The agent's own name for people. */
  label: string;
  /** Where it is written without `--write`. */
  defaultFile(env: NodeJS.ProcessEnv): string;
  /** The file's new text given its current text ("" when absent); throws when it cannot be kept. */
  merge(current: string, endpoint: string, toolTimeoutMs: number): string;
  /** What to run it with so that the gateway is the one approval point in headless runs. */
  runHint(file: string): string;
  /** What the agent needs beside the file to start with it (a problem left, as a line), after a write. */
  afterWrite?(file: string, env: NodeJS.ProcessEnv): string | null;
}

const home = (env: NodeJS.ProcessEnv) => env["HOME"] || os.homedir();

/** A JSON object file's content with `servers.geode` set (other servers and keys kept). */
function mergeJsonServer(current: string, key: string, entry: Record<string, unknown>): string {
  const parsed = current.trim() === "" ? {} : (JSON.parse(current) as unknown);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new Error("does not hold a JSON object");
  const settings = parsed as Record<string, unknown>;
  const servers = settings[key] ?? {};
  if (servers === null || typeof servers !== "object" || Array.isArray(servers))
    throw new Error(`its ${key} is not an object`);
  return `${JSON.stringify({ ...settings, [key]: { ...servers, [MCP_SERVER]: entry } }, null, 2)}\n`;
}

const bearer = (expand: (name: string) => string) => ({ Authorization: `Bearer ${expand(TOKEN_ENV)}` });

/**
 * The `mcpServers` entry of Gemini CLI and of Qwen Code (its fork): streamable HTTP at `httpUrl`,
 * the token as `$GEODE_AGENT_TOKEN` (both expand variables in settings), a tool timeout longer
 * than an approval's, and `trust` so that the agent asks no one: the gateway's policies and
 * approvals decide.
 */
const httpUrlEntry = (httpUrl: string, toolTimeoutMs: number) => ({
  httpUrl,
  headers: bearer((v) => `$${v}`),
  timeout: toolTimeoutMs,
  trust: true,
});

/** Each agent's MCP configuration for the gateway (docs/mcp.md and each agent's page in docs/). */
const TARGETS: Record<McpAgent, McpTarget> = {
  "claude-code": {
    label: "Claude Code",
    defaultFile: (env) => path.join(home(env), ".claude", "geode-mcp.json"),
    merge: (current, url) =>
      mergeJsonServer(current, "mcpServers", { type: "http", url, headers: bearer((v) => `\${${v}}`) }),
    runHint: (file) =>
      `run it with: claude --mcp-config ${file} --allowedTools mcp__${MCP_SERVER} (Claude Code then asks no one: the gateway decides)`,
  },
  codex: {
    label: "Codex",
    defaultFile: (env) => path.join(env["CODEX_HOME"] || path.join(home(env), ".codex"), "config.toml"),
    merge: (current, url, toolTimeoutMs) => {
      const body = [
        `[mcp_servers.${MCP_SERVER}]`,
        `url = ${JSON.stringify(url)}`,
        `bearer_token_env_var = ${JSON.stringify(TOKEN_ENV)}`,
        "startup_timeout_sec = 20",
        `tool_timeout_sec = ${Math.ceil(toolTimeoutMs / 1000)}`,
      ].join("\n");
      const merged = replaceBlock(current, CODEX_BEGIN, CODEX_END, body);
      parse(merged);
      return merged;
    },
    runHint: () =>
      'with approval_policy = "never" (codex exec) Codex runs the gateway\'s tools without asking: the gateway decides',
  },
  "gemini-cli": {
    label: "Gemini CLI",
    defaultFile: (env) => path.join(home(env), ".gemini", "settings.json"),
    merge: (current, httpUrl, toolTimeoutMs) =>
      mergeJsonServer(current, "mcpServers", httpUrlEntry(httpUrl, toolTimeoutMs)),
    runHint: () => `its tools are mcp_${MCP_SERVER}_<tool>; trust is on, so the gateway decides`,
  },
  "qwen-code": {
    label: "Qwen Code",
    defaultFile: qwenUserSettings,
    merge: (current, httpUrl, toolTimeoutMs) =>
      mergeJsonServer(current, "mcpServers", httpUrlEntry(httpUrl, toolTimeoutMs)),
    runHint: () => `its tools are mcp__${MCP_SERVER}__<tool>; trust is on, so the gateway decides`,
  },
  opencode: {
    label: "opencode",
    defaultFile: (env) => path.join(userConfigDir(env), "opencode.json"),
    merge: (current, url, toolTimeoutMs) =>
      mergeJsonServer(current, "mcp", {
        type: "remote",
        url,
        headers: bearer((v) => `{env:${v}}`),
        // The gateway answers 401 for a wrong token: no OAuth flow to start.
        oauth: false,
        timeout: toolTimeoutMs,
      }),
    runHint: () =>
      `its tools are ${MCP_SERVER}_<tool>; opencode run asks no one before them unless a permission rule says "ask": the gateway decides`,
    afterWrite: (file, env) => {
      const left = startInstallDirs(file, false, env)
        .map((dir) => makeInstallOffline(dir))
        .filter((p): p is string => p !== null);
      return left.length === 0
        ? null
        : `opencode will still npm-install at start (${left.join("; ")}), which waits on the network`;
    },
  },
  copilot: {
    label: "Copilot CLI",
    defaultFile: (env) => path.join(home(env), ".copilot", "mcp-config.json"),
    merge: (current, url) =>
      mergeJsonServer(current, "mcpServers", {
        type: "http",
        url,
        headers: bearer((v) => `\${${v}}`),
        tools: ["*"],
      }),
    runHint: (file) =>
      `run it with: copilot --additional-mcp-config @${file} --allow-tool=${MCP_SERVER} (the gateway decides)`,
  },
};

/** `text` with the lines between `begin` and `end` (a previous run's) replaced by `body`. */
function replaceBlock(text: string, begin: string, end: string, body: string): string {
  let rest = text;
  const b = text.indexOf(begin);
  if (b >= 0) {
    const e = text.indexOf(end, b);
    const after = e < 0 ? "" : text.slice(e + end.length).replace(/^\n/, "");
    rest = `${text.slice(0, b).replace(/\n*$/, "")}\n${after}`.replace(/^\n/, "");
  }
  rest = rest.replace(/\n*$/, "");
  return `${rest === "" ? "" : `${rest}\n\n`}${begin}\n${body}\n${end}\n`;
}

/**
 * `geode connect <agent> --mcp [--url URL] [--write PATH] [--check]`: writes the agent's MCP configuration
 * for the gateway's `/v1/mcp` (server `geode`, the agent token from `GEODE_AGENT_TOKEN`, never
 * its value), or prints it with `--print`; `--check` proves the agent lists the gateway's tools.
 */
export async function connectMcp(agent: McpAgent, args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      mcp: { type: "boolean" },
      url: { type: "string" },
      write: { type: "string" },
      print: { type: "boolean", default: false },
      check: { type: "boolean", default: false },
    },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
  if (values.check && values.print) throw new UsageError("--check and --print contradict each other");
  let endpoint: string;
  try {
    endpoint = hookEndpoint(values.url, io.env, agent, MCP_PATH);
  } catch {
    throw new UsageError(`--url is not a URL: ${values.url}`);
  }
  const target = TARGETS[agent];
  // A call may wait for a person: the agent must wait longer than the gateway's approval timeout.
  const toolTimeoutMs = loadConfig(io.env).approvalTimeoutMs + 30_000;
  const file = path.resolve(values.write ?? target.defaultFile(io.env));
  if (values.check) return (await import("./mcp-check.js")).checkMcp(agent, file, values.url, io);
  if (values.print) {
    io.out(target.merge("", endpoint, toolTimeoutMs));
    return 0;
  }
  const current = existsSync(file) ? readFileSync(file, "utf8") : "";
  if (agent === "codex") {
    let text: string;
    try {
      text = target.merge(current, endpoint, toolTimeoutMs);
    } catch (err) {
      io.err(`${file}: ${err instanceof Error ? err.message : err}; nothing written\n`);
      return 1;
    }
    writeAtomically(file, text);
  } else if (!writeMergedJson(file, io, () => JSON.parse(target.merge(current, endpoint, toolTimeoutMs)))) {
    return 1;
  }
  io.out(
    `wrote the MCP server "${MCP_SERVER}" (${endpoint}) for ${target.label} into ${file}; it sends the agent token from ${TOKEN_ENV}\n${target.runHint(file)}\n`,
  );
  const left = target.afterWrite?.(file, io.env) ?? null;
  if (left !== null) io.err(`geode: ${left}\n`);
  return 0;
}
