import path from "node:path";
import {
  AGENT_TOOLS,
  type AgentKind,
  agentMcpTool,
  GUARDED_PATHS_MAX,
  HookName,
  ownEntry,
  type ToolOwner,
  toolFacts,
  toolKindOf,
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

/**
 * The MCP context of an agent's MCP tool (DESIGN section 17): its server and tool from its name,
 * and, its annotations being unknown to the guard, the MCP specification's defaults for a tool
 * that gives none: not read-only, destructive, open-world.
 */
function mcpContext(origin: { server: string; tool: string }): Record<string, unknown> {
  return {
    mcp_server: origin.server,
    mcp_tool: origin.tool,
    read_only: false,
    destructive: true,
    open_world: true,
  };
}

/**
 * The context fields of a tool call: `arguments` from its sanitized arguments, its command, paths
 * and URL by the tool-kind table from the guarded fields of its whole input where it has them
 * (a bounded copy may have been cut, or dropped for the payload's size), else the sanitized ones.
 */
function toolContext(
  owner: ToolOwner | undefined,
  toolName: string,
  args: Record<string, unknown>,
  guarded: Record<string, unknown>,
) {
  const facts = toolFacts(owner, toolName, { ...args, ...guarded });
  const context: Record<string, unknown> = { arguments: JSON.stringify(args) };
  if (facts.command !== undefined) context["command"] = normalizeCommand(facts.command);
  if (facts.paths) context["paths"] = [...new Set(facts.paths.map(normalizePath))];
  if (facts.url !== undefined) context["url"] = facts.url;
  const origin = facts.kind === "mcp" ? agentMcpTool(toolName) : undefined;
  if (origin) Object.assign(context, mcpContext(origin));
  return { kind: facts.kind, context };
}

/**
 * The Cedar requests of one hook call: principal `Geode::Agent` in its groups, the hook's action,
 * resource `Geode::Tool` with its kind, the context from the sanitized payload and the call's
 * guarded argument fields (`guarded`, the dispatcher's Geode-Guarded-Arguments: its command, paths
 * and URL as they run). A call naming several paths gives one request per path (`context.path`),
 * so `like` applies to each of them.
 */
export function cedarRequests(
  hook: PolicyHook,
  payload: Record<string, unknown>,
  sessionId: string,
  caller: CallerIdentity,
  guarded: Record<string, unknown> = {},
): CedarRequest[] {
  let tool = "prompt";
  let kind = "prompt";
  let context: Record<string, unknown> = { arguments: "{}" };
  if (hook === HookName.UserPromptSubmit) {
    context["prompt"] = str(payload["user_input"]) ?? "";
  } else {
    tool = str(payload["tool_name"]) ?? "";
    const owner = ownerOf(caller.agentKind, tool);
    const args = payload["arguments"];
    const sanitized =
      args !== null && typeof args === "object" && !Array.isArray(args)
        ? (args as Record<string, unknown>)
        : undefined;
    if (sanitized !== undefined || Object.keys(guarded).length > 0) {
      // PermissionRequest names its call only in `detail`: its facts come from the guarded fields.
      const built = toolContext(owner, tool, sanitized ?? {}, guarded);
      kind = built.kind;
      context = sanitized === undefined ? { ...built.context, arguments: "{}" } : built.context;
    } else kind = toolKindOf(owner, tool).kind;
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
