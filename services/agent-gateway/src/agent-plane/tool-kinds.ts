import { type AgentKind, safetyLevelOfKind, toolKindOf } from "@geode/contracts";

/**
 * The `safety_level` of an agent's tool, in the tool-executor's effect words, from the tool-kind
 * table: `read` for tools that only read, `communication` for web tools, else `mutation` (shell,
 * writes, edits, MCP tools and any tool not known to only read: the safer reading).
 */
export function safetyLevelOf(agent: AgentKind, toolName: string): "read" | "communication" | "mutation" {
  return safetyLevelOfKind(toolKindOf(agent, toolName).kind);
}
