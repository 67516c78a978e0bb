import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { parse } from "smol-toml";
import { hookEndpoint, type McpAgent } from "../commands/hook-shim.js";
import { gatewayProblem, recordCheck } from "./gateway-check.js";
import { TOKEN_ENV } from "./hook-command.js";
import {
  installProblem,
  managedConfigDir,
  notReadBecause,
  readConfig as readOpencodeConfig,
  startInstallDirs,
} from "./opencode-config.js";
import {
  qwenProjectSettings,
  qwenSystemSettings,
  qwenTrustProblem,
  qwenUserSettings,
} from "./qwen-code-settings.js";

const SERVER = "geode";
const MCP_PATH = "/v1/mcp";

/** What the agent's own configuration says about the `geode` server, or the one thing wrong. */
type AgentMcpSide =
  | { problem: string }
  | {
      url: string;
      /** Why the agent leaves a tool out, or null when it offers it. */
      hidden(tool: string): string | null;
      /** The settings that decide whether the agent asks, as lines. */
      notes: string[];
    };

interface AgentSpec {
  label: string;
  /** Claude Code and Copilot speak 2026-07-28 first; Codex and Gemini CLI 2025-06-18. */
  mode: "auto" | "legacy";
  /** How the agent names a gateway tool for its model. */
  name(tool: string): string;
  /** The line above the tool list. */
  heading: string;
  side(file: string, config: unknown, env: NodeJS.ProcessEnv): AgentMcpSide;
}

const obj = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

const authorizationOf = (headers: unknown): string | undefined => {
  const h = obj(headers) ?? {};
  const key = Object.keys(h).find((k) => k.toLowerCase() === "authorization");
  return key === undefined ? undefined : String(h[key]);
};

/** Null when `header` is the bearer token from GEODE_AGENT_TOKEN in one of the agent's forms. */
function tokenProblem(
  file: string,
  label: string,
  header: string | undefined,
  forms: string[],
): string | null {
  if (forms.some((f) => header?.trim() === `Bearer ${f}`)) return null;
  return `${file}: the geode server does not send the token from ${TOKEN_ENV} the way ${label} expands it (Authorization: Bearer ${forms[0]}): run geode connect with --mcp again`;
}

const noServer = (file: string, agent: McpAgent) =>
  `${file} has no MCP server "${SERVER}": run geode connect ${agent} --mcp --write ${file}`;

const listHides = (list: unknown, tool: string): boolean =>
  Array.isArray(list) && !list.includes("*") && !list.includes(tool);

const GEMINI_BUILT_INS = new Set([
  "read_file",
  "write_file",
  "replace",
  "glob",
  "list_directory",
  "run_shell_command",
  "read_many_files",
  "search_file_content",
  "web_fetch",
  "google_web_search",
  "save_memory",
  "write_todos",
]);

/** Whether `glob` (`*` any run of characters, `?` one) matches all of `name`. */
const globMatches = (glob: string, name: string): boolean =>
  new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".")}$`,
  ).test(name);

/** The value of the last key of `rules` whose glob matches `name` (opencode's rule order), if any. */
const lastMatch = (rules: Record<string, unknown>, name: string): unknown =>
  Object.entries(rules).findLast(([glob]) => globMatches(glob, name))?.[1];

/**
 * Why Qwen Code started here does not read settings file `file`, or null: it reads the user's and
 * the system's settings, and the current folder's `.qwen/settings.json` when it trusts the folder.
 */
function qwenNotRead(file: string, env: NodeJS.ProcessEnv): string | null {
  if (file === qwenUserSettings(env) || file === qwenSystemSettings(env)) return null;
  if (file === qwenProjectSettings(process.cwd())) return qwenTrustProblem(process.cwd(), env);
  return `Qwen Code started in ${process.cwd()} does not read ${file} (it reads ${qwenUserSettings(env)}, ${qwenSystemSettings(env)} and ${qwenProjectSettings(process.cwd())})`;
}

const SPECS: Record<McpAgent, AgentSpec> = {
  "claude-code": {
    label: "Claude Code",
    mode: "auto",
    name: (t) => `mcp__${SERVER}__${t}`,
    heading: "Claude Code will offer its model:",
    side(file, config, env) {
      const entry = obj(obj(obj(config)?.["mcpServers"])?.[SERVER]);
      if (!entry) return { problem: noServer(file, "claude-code") };
      if (entry["type"] !== "http")
        return { problem: `${file}: the geode server is not type "http" (streamable HTTP)` };
      const bad = tokenProblem(file, "Claude Code", authorizationOf(entry["headers"]), [`\${${TOKEN_ENV}}`]);
      if (bad) return { problem: bad };
      const search = env["ENABLE_TOOL_SEARCH"];
      return {
        url: String(entry["url"] ?? ""),
        hidden: () => null,
        notes: [
          `run it with --mcp-config ${file} --allowedTools mcp__${SERVER}: without it Claude Code asks before each tool, and refuses them headless`,
          search === "false"
            ? "ENABLE_TOOL_SEARCH=false here: the tools are in every model request"
            : "set ENABLE_TOOL_SEARCH=false: otherwise Claude Code defers the tools behind its ToolSearch tool",
        ],
      };
    },
  },
  codex: {
    label: "Codex",
    mode: "legacy",
    name: (t) => t,
    heading: `Codex will offer its model, in the namespace mcp__${SERVER}:`,
    side(file, config) {
      const root = obj(config) ?? {};
      const entry = obj(obj(root["mcp_servers"])?.[SERVER]);
      if (!entry) return { problem: noServer(file, "codex") };
      if (entry["enabled"] === false) return { problem: `${file} sets enabled = false for the geode server` };
      if (entry["bearer_token_env_var"] !== TOKEN_ENV)
        return {
          problem: `${file}: the geode server does not send the token from ${TOKEN_ENV} (bearer_token_env_var = "${TOKEN_ENV}"): run geode connect codex --mcp again`,
        };
      const profile =
        typeof root["profile"] === "string" ? obj(obj(root["profiles"])?.[root["profile"]]) : undefined;
      const policy = profile?.["approval_policy"] ?? root["approval_policy"];
      if (policy !== "never")
        return {
          problem: `${file} sets approval_policy = ${policy === undefined ? "nothing" : JSON.stringify(policy)}: Codex asks before the gateway's tools instead of the gateway deciding; set approval_policy = "never"`,
        };
      return {
        url: String(entry["url"] ?? ""),
        hidden: (t) =>
          listHides(entry["enabled_tools"], t)
            ? "not in enabled_tools"
            : Array.isArray(entry["disabled_tools"]) && entry["disabled_tools"].includes(t)
              ? "in disabled_tools"
              : null,
        notes: [
          'approval_policy = "never": Codex runs the gateway\'s tools without asking, the gateway decides',
        ],
      };
    },
  },
  "gemini-cli": {
    label: "Gemini CLI",
    mode: "legacy",
    name: (t) => `mcp_${SERVER}_${t}`,
    heading: "Gemini CLI will offer its model:",
    side(file, config) {
      const root = obj(config) ?? {};
      const entry = obj(obj(root["mcpServers"])?.[SERVER]);
      if (!entry) return { problem: noServer(file, "gemini-cli") };
      const mcp = obj(root["mcp"]);
      if (Array.isArray(mcp?.["excluded"]) && mcp["excluded"].includes(SERVER))
        return { problem: `${file} lists geode in mcp.excluded: Gemini CLI does not start it` };
      if (Array.isArray(mcp?.["allowed"]) && !mcp["allowed"].includes(SERVER))
        return { problem: `${file} has an mcp.allowed list without geode: Gemini CLI does not start it` };
      const bad = tokenProblem(file, "Gemini CLI", authorizationOf(entry["headers"]), [
        `$${TOKEN_ENV}`,
        `\${${TOKEN_ENV}}`,
      ]);
      if (bad) return { problem: bad };
      if (entry["trust"] !== true)
        return {
          problem: `${file} does not trust the geode server: Gemini CLI asks before each of its tools instead of the gateway deciding; set "trust": true`,
        };
      return {
        url: String(entry["httpUrl"] ?? entry["url"] ?? ""),
        hidden: (t) =>
          listHides(entry["includeTools"], t)
            ? "not in includeTools"
            : Array.isArray(entry["excludeTools"]) && entry["excludeTools"].includes(t)
              ? "in excludeTools"
              : GEMINI_BUILT_INS.has(t)
                ? "its name is a built-in tool's"
                : null,
        notes: [
          "trust: true: Gemini CLI asks no one before the gateway's tools, the gateway decides",
          'headless (gemini -p) it offers them with --approval-mode yolo or a policy rule toolName = "mcp_geode_*"',
        ],
      };
    },
  },
  "qwen-code": {
    label: "Qwen Code",
    mode: "legacy",
    name: (t) => `mcp__${SERVER}__${t}`,
    heading: "Qwen Code will offer its model:",
    side(file, config, env) {
      const safe = env["QWEN_CODE_SAFE_MODE"];
      if (safe !== undefined && safe !== "" && safe !== "0" && safe.toLowerCase() !== "false")
        return { problem: "QWEN_CODE_SAFE_MODE is set: Qwen Code starts no MCP server" };
      const notRead = qwenNotRead(file, env);
      if (notRead !== null) return { problem: notRead };
      const root = obj(config) ?? {};
      const entry = obj(obj(root["mcpServers"])?.[SERVER]);
      if (!entry) return { problem: noServer(file, "qwen-code") };
      const mcp = obj(root["mcp"]);
      const listed = (list: unknown) =>
        Array.isArray(list) && list.some((g) => globMatches(String(g), SERVER));
      if (listed(mcp?.["excluded"]))
        return { problem: `${file}: mcp.excluded holds geode: Qwen Code does not start it` };
      if (Array.isArray(mcp?.["allowed"]) && !listed(mcp["allowed"]))
        return { problem: `${file} has an mcp.allowed list without geode: Qwen Code does not start it` };
      const bad = tokenProblem(file, "Qwen Code", authorizationOf(entry["headers"]), [
        `$${TOKEN_ENV}`,
        `\${${TOKEN_ENV}}`,
      ]);
      if (bad) return { problem: bad };
      if (entry["trust"] !== true)
        return {
          problem: `${file} does not trust the geode server: Qwen Code asks before each of its tools instead of the gateway deciding; set "trust": true`,
        };
      return {
        url: String(entry["httpUrl"] ?? ""),
        hidden: (t) =>
          Array.isArray(entry["excludeTools"]) && entry["excludeTools"].includes(t)
            ? "in excludeTools"
            : listHides(entry["includeTools"], t)
              ? "not in includeTools"
              : null,
        notes: ["trust: true: Qwen Code asks no one before the gateway's tools, the gateway decides"],
      };
    },
  },
  opencode: {
    label: "opencode",
    mode: "legacy",
    name: (t) => `${SERVER}_${t}`,
    heading: "opencode will offer its model:",
    side(file, config, env) {
      const notRead = notReadBecause(file, process.cwd(), env);
      if (notRead !== null) return { problem: notRead };
      const root = obj(config) ?? {};
      const entry = obj(obj(root["mcp"])?.[SERVER]);
      if (!entry) return { problem: noServer(file, "opencode") };
      if (entry["type"] !== "remote")
        return { problem: `${file}: the geode server is not type "remote" (streamable HTTP)` };
      if (entry["enabled"] === false) return { problem: `${file} sets enabled: false for the geode server` };
      const bad = tokenProblem(file, "opencode", authorizationOf(entry["headers"]), [`{env:${TOKEN_ENV}}`]);
      if (bad) return { problem: bad };
      for (const dir of startInstallDirs(file, path.dirname(file) === managedConfigDir(env), env)) {
        const problem = existsSync(dir) ? installProblem(dir) : null;
        if (problem)
          return {
            problem: `opencode npm-installs @opencode-ai/plugin into ${dir} at start (${problem}), which waits on the network: run geode connect opencode --mcp again`,
          };
      }
      const permission = root["permission"];
      const rule = (tool: string): unknown =>
        typeof permission === "string" ? permission : lastMatch(obj(permission) ?? {}, `${SERVER}_${tool}`);
      const asks = (tool: string) => rule(tool) === "ask";
      return {
        url: String(entry["url"] ?? ""),
        hidden: (t) =>
          lastMatch(obj(root["tools"]) ?? {}, `${SERVER}_${t}`) === false
            ? "turned off in tools"
            : rule(t) === "deny"
              ? "denied by a permission rule"
              : asks(t)
                ? 'under a permission rule "ask", which opencode run refuses'
                : null,
        notes: [
          'no permission rule says "ask": opencode runs the gateway\'s tools without asking, the gateway decides',
        ],
      };
    },
  },
  copilot: {
    label: "Copilot CLI",
    mode: "auto",
    name: (t) => `${SERVER}-${t}`,
    heading: "Copilot CLI will offer its model:",
    side(file, config) {
      const entry = obj(obj(obj(config)?.["mcpServers"])?.[SERVER]);
      if (!entry) return { problem: noServer(file, "copilot") };
      if (entry["type"] !== "http")
        return { problem: `${file}: the geode server is not type "http" (streamable HTTP)` };
      const bad = tokenProblem(file, "Copilot CLI", authorizationOf(entry["headers"]), [`\${${TOKEN_ENV}}`]);
      if (bad) return { problem: bad };
      if (!Array.isArray(entry["tools"]) || entry["tools"].length === 0)
        return {
          problem: `${file}: the geode server has no "tools" list: Copilot CLI offers none of them; set ["*"]`,
        };
      return {
        url: String(entry["url"] ?? ""),
        hidden: (t) => (listHides(entry["tools"], t) ? 'not in its "tools" list' : null),
        notes: [
          `run it with --additional-mcp-config @${file} --allow-tool=${SERVER}: without it Copilot CLI asks before each tool, and refuses them headless`,
        ],
      };
    },
  },
};

/** The agent's configuration as it parses it: JSON, or TOML for Codex. */
function readConfig(agent: McpAgent, file: string): { config: unknown } | { problem: string } {
  if (!existsSync(file))
    return { problem: `${file} does not exist: run geode connect ${agent} --mcp --write ${file}` };
  const text = readFileSync(file, "utf8");
  try {
    if (agent === "opencode") return { config: readOpencodeConfig(file) };
    return { config: agent === "codex" ? parse(text) : JSON.parse(text) };
  } catch {
    return {
      problem: `${file} is not valid ${agent === "codex" ? "TOML" : "JSON"}: ${SPECS[agent].label} ignores it`,
    };
  }
}

/** The gateway's tools as the agent lists them, speaking MCP with the token; or what failed. */
async function listTools(
  url: string,
  token: string,
  mode: "auto" | "legacy",
): Promise<{ tools: string[] } | { problem: string }> {
  const client = new Client(
    { name: "geode-connect-check", version: "0.1.0" },
    { versionNegotiation: { mode } },
  );
  try {
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
      { timeout: 10_000 },
    );
    const tools: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: 10_000 });
      tools.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor);
    return { tools };
  } catch (err) {
    return {
      problem: `the gateway's MCP endpoint ${url} failed to list tools: ${err instanceof Error ? err.message.split("\n")[0] : err}`,
    };
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * `geode connect <agent> --mcp --check`: the agent's MCP configuration where it reads it names the
 * `geode` server at a gateway's `/v1/mcp` with the token from GEODE_AGENT_TOKEN, the gateway
 * answers and knows the token, and, spoken to as the agent does, lists tools the agent offers its
 * model (printed with the agent's names, with the settings that decide whether the agent asks).
 * Exit 0 when all hold, else 1 with the one line that says what is wrong.
 */
export async function checkMcp(
  agent: McpAgent,
  file: string,
  urlOption: string | undefined,
  io: { out(s: string): void; err(s: string): void; env: NodeJS.ProcessEnv },
): Promise<number> {
  const spec = SPECS[agent];
  const fail = async (problem: string, recordAt?: string) => {
    if (recordAt) await recordCheck(recordAt, io.env, { ok: false, detail: `mcp: ${problem}` });
    io.err(`${problem}\n`);
    return 1;
  };
  const read = readConfig(agent, file);
  if ("problem" in read) return fail(read.problem);
  const side = spec.side(file, read.config, io.env);
  if ("problem" in side) return fail(side.problem);
  let url: URL;
  try {
    url = new URL(side.url);
  } catch {
    return fail(`${file}: the geode server's URL is not a URL: ${side.url || "none"}`);
  }
  if (url.pathname !== MCP_PATH)
    return fail(`${file}: the geode server points at ${url}, not a gateway's ${MCP_PATH}`);
  if (urlOption !== undefined) {
    const wanted = hookEndpoint(urlOption, io.env, agent, MCP_PATH);
    if (wanted !== url.toString()) return fail(`${file}: the geode server points at ${url}, not ${wanted}`);
  }
  const checkAt = hookEndpoint(url.origin, io.env, agent);
  const gateway = await gatewayProblem(url.toString(), io.env, {
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "ping" }),
    headers: { accept: "application/json, text/event-stream" },
  });
  if (gateway !== null) return fail(gateway, checkAt);
  const listed = await listTools(url.toString(), io.env[TOKEN_ENV] ?? "", spec.mode);
  if ("problem" in listed) return fail(listed.problem, checkAt);
  if (listed.tools.length === 0)
    return fail(
      `the gateway lists no MCP tools for this agent: register a server (geode mcp add) or check the servers' groups`,
      checkAt,
    );
  const shown = listed.tools.filter((t) => side.hidden(t) === null);
  const hidden = listed.tools.filter((t) => side.hidden(t) !== null);
  if (shown.length === 0)
    return fail(
      `${spec.label} hides every tool of the gateway: ${hidden[0]} is ${side.hidden(hidden[0] ?? "")}`,
      checkAt,
    );
  const ok = `ok: ${spec.label} reads the MCP server "${SERVER}" (${url}) from ${file} with the token from ${TOKEN_ENV}; the gateway knows the token and lists ${listed.tools.length} tools`;
  await recordCheck(checkAt, io.env, { ok: true, detail: `mcp: ${ok}` });
  io.out(
    [
      ok,
      spec.heading,
      ...shown.map((t) => `  ${spec.name(t)}`),
      ...(hidden.length > 0
        ? ["hidden from its model:", ...hidden.map((t) => `  ${t} (${side.hidden(t)})`)]
        : []),
      "settings:",
      ...side.notes.map((n) => `  ${n}`),
      "",
    ].join("\n"),
  );
  return 0;
}
