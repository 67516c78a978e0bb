import path from "node:path";
import {
  AGENT_TOOLS,
  type AgentKind,
  agentMcpTool,
  GUARDED_PATHS_MAX,
  HookName,
  isMcpToolName,
  type McpToolAnnotations,
  type McpToolOrigin,
  mcpToolFacts,
  ownEntry,
  type ToolFacts,
  type ToolOwner,
  toolFacts,
} from "@geode/contracts";

/** The hooks the policy-guard serves (DESIGN section 17). */
export const POLICY_HOOKS = [
  HookName.PreToolUse,
  HookName.PermissionRequest,
  HookName.UserPromptSubmit,
  HookName.PostToolUse,
] as const;
export type PolicyHook = (typeof POLICY_HOOKS)[number];

export function isPolicyHook(hook: string): hook is PolicyHook {
  return (POLICY_HOOKS as readonly string[]).includes(hook);
}

/** Who made a call: the gateway's agent (or `runtime`), its kind and its groups. */
export interface CallerIdentity {
  agent: string;
  /** Unknown for a runtime's own session. */
  agentKind?: AgentKind | undefined;
  groups: readonly string[];
}

/**
 * What the guard knows of a call beside its payload, from sources the caller cannot shape.
 */
export interface TrustedFacts {
  /** The call's guarded argument fields (the dispatcher's Geode-Guarded-Arguments). */
  guarded?: Record<string, unknown>;
  /**
   * The MCP upstream of the named tool as the mcp-bridge registered it (the `mcp` of its
   * definition in KV `{ns}_tools`), when it is a registered MCP tool; see {@link registeredToolApplies}.
   */
  registered?: McpToolOrigin | undefined;
}

/** The Cedar action of each hook. */
const ACTION: Record<PolicyHook, string> = {
  PreToolUse: "call_tool",
  PermissionRequest: "call_tool",
  PostToolUse: "use_result",
  UserPromptSubmit: "submit_prompt",
};

/**
 * Most paths of one call evaluated one by one (`context.path`): every path a guard can see whole
 * (a call naming more is refused by a closed guard's hook before it gets here).
 */
export const MAX_PATHS_EVALUATED = GUARDED_PATHS_MAX;

/** One Cedar request without the policies: what `statefulIsAuthorized` takes. */
export interface CedarRequest {
  principal: { type: string; id: string };
  action: { type: string; id: string };
  resource: { type: string; id: string };
  context: Record<string, unknown>;
  entities: Array<{ uid: { type: string; id: string }; attrs: Record<string, unknown>; parents: unknown[] }>;
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

const OWNERS = Object.keys(AGENT_TOOLS) as ToolOwner[];

/**
 * Whose tool table names this tool: the caller's agent kind; for a session without one, the
 * runtime's table, else the first agent's table that knows the name (so `Bash` is a shell everywhere).
 */
function ownerOf(agentKind: AgentKind | undefined, tool: string): ToolOwner | undefined {
  if (agentKind !== undefined) return agentKind;
  if (ownEntry(AGENT_TOOLS.runtime, tool)) return "runtime";
  return OWNERS.find((o) => ownEntry(AGENT_TOOLS[o], tool) !== undefined);
}

/** Whitespace runs become one space, so `rm  -rf` reads as `rm -rf`. */
function normalizeCommand(command: string): string {
  return command.replace(/\s+/g, " ").trim();
}

/** A path as policies see it: `a/../.env` is `.env`, `./x` is `x`. */
function normalizePath(p: string): string {
  return p === "" ? p : path.posix.normalize(p);
}

/** The agent kinds whose hooks name the agent's own tools (its table, its MCP tools' names). */
const HOOKED: ReadonlySet<string> = new Set<ToolOwner>([
  "claude-code",
  "codex",
  "gemini-cli",
  "copilot",
  "qwen-code",
  "opencode",
]);

/**
 * Whether a registered MCP tool of this name decides the call's kind and MCP context: not when the
 * caller is an agent whose own tool table names the tool, nor when a hooked agent names one of its
 * own MCP tools (`mcp__server__tool`: its servers, not the bridge's). An MCP client of the gateway
 * (agent kind `mcp`) and a runtime's session call the registered tools by their registered names.
 */
export function registeredToolApplies(caller: CallerIdentity, tool: string): boolean {
  const kind = caller.agentKind;
  if (kind === undefined) return true;
  if (ownEntry(AGENT_TOOLS[kind], tool) !== undefined) return false;
  return !(HOOKED.has(kind) && isMcpToolName(tool));
}

/**
 * The MCP context of an MCP tool (DESIGN sections 17 and 19): its server and tool, and its
 * annotations with the MCP specification's defaults where it gives none (not read-only,
 * destructive, open-world). An agent's MCP tool (known by its name only) has no annotations the
 * guard can trust: all defaults; a registered one has those of its definition.
 */
function mcpContext(
  origin: { server: string; tool: string },
  annotations: McpToolAnnotations = {},
): Record<string, unknown> {
  return {
    mcp_server: origin.server,
    mcp_tool: origin.tool,
    read_only: annotations.readOnlyHint ?? false,
    destructive: annotations.destructiveHint ?? true,
    open_world: annotations.openWorldHint ?? true,
  };
}

/** How the guard reads one call's tool: by its owner's table, or as a registered MCP tool. */
type ToolReading = { owner: ToolOwner | undefined; registered?: undefined } | { registered: McpToolOrigin };

/**
 * The context fields of a tool call: `arguments` from its sanitized arguments, its command, paths
 * and URL by the tool-kind table from the guarded fields of its whole input where it has them
 * (a bounded copy may have been cut, or dropped for the payload's size), else the sanitized ones.
 */
function toolContext(
  reading: ToolReading,
  toolName: string,
  args: Record<string, unknown>,
  guarded: Record<string, unknown>,
) {
  const all = { ...args, ...guarded };
  const facts: ToolFacts = reading.registered ? mcpToolFacts(all) : toolFacts(reading.owner, toolName, all);
  const context: Record<string, unknown> = { arguments: JSON.stringify(args) };
  if (facts.command !== undefined) context["command"] = normalizeCommand(facts.command);
  if (facts.paths) context["paths"] = [...new Set(facts.paths.map(normalizePath))];
  if (facts.url !== undefined) context["url"] = facts.url;
  Object.assign(context, toolMcpContext(reading, toolName, facts.kind));
  return { kind: facts.kind, context };
}

/** The MCP context of a call's tool (empty for a tool that is not an MCP tool). */
function toolMcpContext(reading: ToolReading, toolName: string, kind: string): Record<string, unknown> {
  if (reading.registered) return mcpContext(reading.registered, reading.registered.annotations);
  const origin = kind === "mcp" ? agentMcpTool(toolName) : undefined;
  return origin ? mcpContext(origin) : {};
}

/**
 * The Cedar requests of one hook call: principal `Geode::Agent` in its groups, the hook's action,
 * resource `Geode::Tool` with its kind, the context from the sanitized payload and the trusted
 * facts: the call's guarded argument fields (the dispatcher's Geode-Guarded-Arguments: its
 * command, paths and URL as they run) and, for a tool the mcp-bridge registered, its MCP origin
 * and annotations from its definition (never from the payload). A call naming several paths gives
 * one request per path (`context.path`), so `like` applies to each of them.
 */
export function cedarRequests(
  hook: PolicyHook,
  payload: Record<string, unknown>,
  sessionId: string,
  caller: CallerIdentity,
  trusted: TrustedFacts = {},
): CedarRequest[] {
  const guarded = trusted.guarded ?? {};
  let tool = "prompt";
  let kind = "prompt";
  let context: Record<string, unknown> = { arguments: "{}" };
  if (hook === HookName.UserPromptSubmit) {
    context["prompt"] = str(payload["user_input"]) ?? "";
  } else {
    tool = str(payload["tool_name"]) ?? "";
    const reading: ToolReading =
      trusted.registered && registeredToolApplies(caller, tool)
        ? { registered: trusted.registered }
        : { owner: ownerOf(caller.agentKind, tool) };
    const args = payload["arguments"];
    const sanitized =
      args !== null && typeof args === "object" && !Array.isArray(args)
        ? (args as Record<string, unknown>)
        : undefined;
    // PermissionRequest names its call only in `detail`: its facts come from the guarded fields.
    const built = toolContext(reading, tool, sanitized ?? {}, guarded);
    kind = built.kind;
    context = sanitized === undefined ? { ...built.context, arguments: "{}" } : built.context;
    const level = str(payload["safety_level"]);
    if (level !== undefined) context["safety_level"] = level;
    if (typeof payload["has_error"] === "boolean") context["has_error"] = payload["has_error"];
  }
  context = { ...context, hook, session_id: sessionId, agent_kind: caller.agentKind ?? "" };
  const principal = { type: "Geode::Agent", id: caller.agent };
  const resource = { type: "Geode::Tool", id: tool };
  const groups = caller.groups.map((g) => ({ type: "Geode::Group", id: g }));
  const base = {
    principal,
    action: { type: "Geode::Action", id: ACTION[hook] },
    resource,
    entities: [
      { uid: principal, attrs: {}, parents: groups },
      ...groups.map((uid) => ({ uid, attrs: {}, parents: [] })),
      { uid: resource, attrs: { kind }, parents: [] },
    ],
  };
  const paths = (context["paths"] as string[] | undefined) ?? [];
  if (paths.length === 0) return [{ ...base, context }];
  return paths.slice(0, MAX_PATHS_EVALUATED).map((p) => ({ ...base, context: { ...context, path: p } }));
}
