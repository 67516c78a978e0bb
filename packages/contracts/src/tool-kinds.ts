import type { AgentKind } from "./agent-record.js";
import type { McpToolOrigin } from "./mcp.js";
import { ownEntry } from "./own-entry.js";
import { maskSecrets } from "./sanitize.js";

/** What a tool does, in one word every agent's tools map to: one policy for every agent. */
export const TOOL_KINDS = [
  "shell",
  "file_read",
  "file_write",
  "file_edit",
  "web_fetch",
  "mcp",
  "other",
] as const;
export type ToolKind = (typeof TOOL_KINDS)[number];

/**
 * One tool of one agent: its kind, and where its shell command, its file paths and its URL sit in
 * its arguments (argument names; a path field may hold one path or a list of them).
 */
export interface ToolKindEntry {
  kind: ToolKind;
  command?: string;
  paths?: readonly string[];
  url?: string;
}

/** Whose tool names: an agent kind, or a runtime's own tools (the tool-executor's built-ins and the demo's). */
export type ToolOwner = AgentKind | "runtime";

const shell = (command: string): ToolKindEntry => ({ kind: "shell", command });
const read = (...paths: string[]): ToolKindEntry => ({ kind: "file_read", paths });
const write = (...paths: string[]): ToolKindEntry => ({ kind: "file_write", paths });
const edit = (...paths: string[]): ToolKindEntry => ({ kind: "file_edit", paths });
const fetchUrl = (url: string): ToolKindEntry => ({ kind: "web_fetch", url });
const OTHER: ToolKindEntry = { kind: "other" };
const WEB: ToolKindEntry = { kind: "web_fetch" };

/**
 * Every pinned agent's tool names as its hooks name them (checked against the real CLIs by the
 * gateway tests: Claude Code 2.1.332, Codex CLI 0.171.0, Gemini CLI 0.61.0, Copilot CLI 1.0.102,
 * Qwen Code 0.24.4, opencode 1.18.33).
 * MCP tools are recognized by their names' form (`toolKindOf`); any other tool is `other`.
 */
export const AGENT_TOOLS: Readonly<Record<ToolOwner, Readonly<Record<string, ToolKindEntry>>>> = {
  "claude-code": {
    Bash: shell("command"),
    BashOutput: OTHER,
    KillShell: OTHER,
    Read: read("file_path"),
    NotebookRead: read("notebook_path"),
    Glob: read("path"),
    Grep: read("path"),
    LS: read("path"),
    Write: write("file_path"),
    Edit: edit("file_path"),
    MultiEdit: edit("file_path"),
    NotebookEdit: edit("notebook_path"),
    WebFetch: fetchUrl("url"),
    WebSearch: WEB,
  },
  // Codex names its shell tool (exec_command) `Bash` for hooks, with the command as `command`.
  codex: {
    Bash: shell("command"),
    apply_patch: edit(),
    view_image: read("path"),
  },
  "gemini-cli": {
    run_shell_command: shell("command"),
    read_file: read("file_path"),
    read_many_files: read("include"),
    list_directory: read("dir_path"),
    glob: read("dir_path"),
    grep_search: read("dir_path"),
    write_file: write("file_path"),
    replace: edit("file_path"),
    web_fetch: WEB,
    google_web_search: WEB,
    // Gemini CLI 0.61.0's other tools: background shells, plans, todos, skills, sub-agents.
    list_background_processes: OTHER,
    read_background_output: OTHER,
    write_todos: OTHER,
    update_topic: OTHER,
    enter_plan_mode: OTHER,
    exit_plan_mode: OTHER,
    activate_skill: OTHER,
    invoke_agent: OTHER,
    ask_user: OTHER,
  },
  // The 17 tools Copilot CLI offers its model offline (`view`, `grep`, `glob` take `path`/`paths`).
  copilot: {
    bash: shell("command"),
    read_bash: OTHER,
    stop_bash: OTHER,
    list_bash: OTHER,
    view: read("path"),
    grep: read("paths"),
    glob: read("paths"),
    create: write("path"),
    edit: edit("path"),
    fetch_copilot_cli_documentation: OTHER,
    skill: OTHER,
    sql: OTHER,
    session_store_sql: OTHER,
    read_agent: OTHER,
    list_agents: OTHER,
    write_agent: OTHER,
    task: OTHER,
  },
  // Qwen Code 0.24.4's runtime tool ids (its hooks' `tool_name`; deferred ones reached through tool_search).
  "qwen-code": {
    run_shell_command: shell("command"),
    read_file: read("file_path"),
    list_directory: read("path"),
    glob: read("path"),
    grep_search: read("path"),
    zoom_image: read("file_path"),
    write_file: write("file_path"),
    edit: edit("file_path"),
    notebook_edit: edit("notebook_path"),
    web_fetch: fetchUrl("url"),
    web_search: WEB,
    exec: OTHER,
    monitor: OTHER,
    todo_write: OTHER,
    save_memory: OTHER,
    agent: OTHER,
    skill: OTHER,
    tool_call: OTHER,
    tool_search: OTHER,
    list_agents: OTHER,
    get_goal: OTHER,
    update_goal: OTHER,
    ask_user_question: OTHER,
    enter_plan_mode: OTHER,
    exit_plan_mode: OTHER,
    lsp: OTHER,
  },
  // opencode 1.18.33's tools (the ten it offers its model headless, and those of its other modes).
  opencode: {
    bash: shell("command"),
    read: read("filePath"),
    glob: read("path"),
    grep: read("path"),
    list: read("path"),
    write: write("filePath"),
    edit: edit("filePath"),
    multiedit: edit("filePath"),
    apply_patch: edit(),
    webfetch: fetchUrl("url"),
    websearch: WEB,
    codesearch: WEB,
    task: OTHER,
    skill: OTHER,
    todowrite: OTHER,
    todoread: OTHER,
    question: OTHER,
  },
  // MCP clients name only the gateway's registered tools (`{server}_{tool}`), no built-ins.
  mcp: {},
  runtime: {
    "shell.exec": shell("command"),
    "fs.read": read("path"),
    "fs.write": write("path"),
  },
};

/** MCP tools as agents name them: `mcp__<server>__<tool>` (Claude Code, Codex), `mcp_<server>_<tool>` (Gemini CLI). */
const MCP_TOOL = /^mcp__?[A-Za-z0-9_-]+/;

/** Whether a tool name has the agents' MCP form (`mcp__server__tool`, `mcp_server_tool`). */
export const isMcpToolName = (toolName: string): boolean => MCP_TOOL.test(toolName);

/**
 * The server and tool of an agent's MCP tool name (`mcp__fs__write_file` is server `fs`, tool
 * `write_file`; Gemini CLI's `mcp_fs_write_file` splits at its first `_` after the server), or
 * undefined for another name. Only the name counts: a payload cannot make a tool an MCP tool.
 */
export function agentMcpTool(toolName: string): { server: string; tool: string } | undefined {
  const m =
    /^mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__(.+)$/.exec(toolName) ??
    /^mcp_([A-Za-z0-9-]+)_(.+)$/.exec(toolName);
  return m ? { server: m[1] as string, tool: m[2] as string } : undefined;
}

/**
 * The argument names an MCP tool's command, paths and URL are read from (DESIGN section 17): MCP
 * servers have no tool-kind table, so the guard reads the names their tools commonly use.
 */
export const MCP_GUARDED_FIELDS = {
  command: ["command", "cmd"],
  paths: ["path", "paths", "file_path", "source", "destination"],
  url: ["url", "uri"],
} as const;

/**
 * The entry of `toolName` of `owner` (a runtime when unknown): its table row, `mcp` by its name's
 * form, else `other`. The name comes from the wire: only the table's own rows count.
 */
export function toolKindOf(owner: ToolOwner | undefined, toolName: string): ToolKindEntry {
  const entry = ownEntry(AGENT_TOOLS[owner ?? "runtime"], toolName);
  if (entry) return entry;
  return MCP_TOOL.test(toolName) ? { kind: "mcp" } : OTHER;
}

/** What a tool call touches, read from its arguments by its table entry. */
export interface ToolFacts {
  kind: ToolKind;
  command?: string;
  paths?: string[];
  url?: string;
}

const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>]+/;

/**
 * The kind of a call and the command, paths and URL it names (strings only; a web tool without a
 * URL field yields the first URL in its text arguments).
 */
export function toolFacts(
  owner: ToolOwner | undefined,
  toolName: string,
  args: Record<string, unknown>,
): ToolFacts {
  const entry = toolKindOf(owner, toolName);
  if (entry.kind === "mcp" && isMcpToolName(toolName)) return mcpToolFacts(args);
  const facts: ToolFacts = { kind: entry.kind };
  if (entry.command !== undefined && typeof args[entry.command] === "string")
    facts.command = args[entry.command] as string;
  const paths = stringsOf(args, entry.paths ?? []);
  if (paths.length > 0) facts.paths = paths;
  if (entry.url !== undefined && typeof args[entry.url] === "string") facts.url = args[entry.url] as string;
  else if (entry.kind === "web_fetch") {
    const text = Object.values(args).find((v): v is string => typeof v === "string" && URL_IN_TEXT.test(v));
    const m = text === undefined ? null : URL_IN_TEXT.exec(text);
    if (m) facts.url = m[0];
  }
  return facts;
}

/** The strings of `fields` in `args`: a string field as itself, the strings of an array field. */
function stringsOf(args: Record<string, unknown>, fields: readonly string[]): string[] {
  return fields.flatMap((f) => {
    const v = args[f];
    return typeof v === "string"
      ? [v]
      : Array.isArray(v)
        ? v.filter((x): x is string => typeof x === "string")
        : [];
  });
}

/**
 * An MCP call's facts from its arguments named as in {@link MCP_GUARDED_FIELDS}: an agent's MCP
 * tool (by its name's form) or a tool the mcp-bridge registered (by its definition).
 */
export function mcpToolFacts(args: Record<string, unknown>): ToolFacts {
  const facts: ToolFacts = { kind: "mcp" };
  const first = (fields: readonly string[]): string | undefined =>
    fields.map((f) => args[f]).find((v): v is string => typeof v === "string");
  const command = first(MCP_GUARDED_FIELDS.command);
  if (command !== undefined) facts.command = command;
  const paths = stringsOf(args, MCP_GUARDED_FIELDS.paths);
  if (paths.length > 0) facts.paths = paths;
  const url = first(MCP_GUARDED_FIELDS.url);
  if (url !== undefined) facts.url = url;
  return facts;
}

/** A call's target is at most this many characters (code points), `…` included when cut. */
export const TOOL_TARGET_CHARS = 120;
/** Only this much of a long command is looked at: the rest could never show. */
const TARGET_SCAN_CHARS = 2048;

/**
 * The upstream of a tool the mcp-bridge registered (`registeredMcpOrigin` of its definition): the
 * records of its calls carry it, so a story names the call `server · tool`.
 */
type ToolMcpOrigin = Pick<McpToolOrigin, "server" | "tool">;

/**
 * What a call acts on, in one short line for people: its shell command, else its file paths
 * (joined by ", "), else its URL, as the tool-kind table finds them (a tool the mcp-bridge
 * registered, given its `mcp`: as {@link mcpToolFacts} does); undefined for a tool without
 * any. Secret-looking parts are masked before it is cut (a cut secret could escape the masks),
 * whitespace and control characters collapse to one space, and a text over
 * {@link TOOL_TARGET_CHARS} ends in `…`.
 */
export function toolTarget(
  owner: ToolOwner | undefined,
  toolName: string,
  args: Record<string, unknown>,
  mcp?: ToolMcpOrigin,
): string | undefined {
  const facts = mcp ? mcpToolFacts(args) : toolFacts(owner, toolName, args);
  const raw = facts.command ?? facts.paths?.join(", ") ?? facts.url;
  if (raw === undefined) return undefined;
  const text = maskSecrets([...raw].slice(0, TARGET_SCAN_CHARS).join(""))
    .replace(/[\s\u0000-\u001f\u007f]+/g, " ")
    .trim();
  if (text === "") return undefined;
  const chars = [...text];
  return chars.length <= TOOL_TARGET_CHARS ? text : `${chars.slice(0, TOOL_TARGET_CHARS - 1).join("")}…`;
}

/** The `mcp` field of a call's record: the server and the upstream's own name of the tool. */
const mcpField = (mcp: ToolMcpOrigin | undefined) =>
  mcp === undefined ? {} : { mcp: { server: mcp.server, tool: mcp.tool } };

/**
 * The payload of a `tool.called` timeline record (a call that goes ahead): the tool, its effect,
 * its arguments' digest, when it has one what it acts on (`toolTarget`) and, for a tool the
 * mcp-bridge registered, its upstream (`mcp`; its target then read as an MCP tool's).
 */
export function toolCalledPayload(
  owner: ToolOwner | undefined,
  toolName: string,
  effect: string,
  args: Record<string, unknown>,
  argumentsSha256: string,
  mcp?: ToolMcpOrigin,
): Record<string, unknown> {
  const target = toolTarget(owner, toolName, args, mcp);
  return {
    tool_name: toolName,
    effect,
    arguments_sha256: argumentsSha256,
    ...(target === undefined ? {} : { target }),
    ...mcpField(mcp),
  };
}

/**
 * The payload of the `tool.completed` record of a call refused before it ran (blocked at
 * PreToolUse, or denied): its only record naming the tool, with the reason, what the call would
 * have acted on and, for a tool the mcp-bridge registered, its upstream (`mcp`).
 */
export function toolRefusedPayload(
  owner: ToolOwner | undefined,
  toolName: string,
  args: Record<string, unknown>,
  status: "blocked" | "denied",
  reason: string,
  mcp?: ToolMcpOrigin,
): Record<string, unknown> {
  const target = toolTarget(owner, toolName, args, mcp);
  return {
    tool_name: toolName,
    status,
    has_error: false,
    executed: false,
    reason,
    ...(target === undefined ? {} : { target }),
    ...mcpField(mcp),
  };
}

/**
 * A tool's `safety_level` in the tool-executor's effect words: `read` for reading kinds,
 * `communication` for web tools, else `mutation` (shell, writes, edits, MCP tools and any tool not
 * known to only read: the safer reading).
 */
export function safetyLevelOfKind(kind: ToolKind): "read" | "communication" | "mutation" {
  if (kind === "file_read") return "read";
  if (kind === "web_fetch") return "communication";
  return "mutation";
}
