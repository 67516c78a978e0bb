/** Tools that only read; everything else counts as a mutation (the safer reading). */
const READ_TOOLS = new Set(["Read", "Glob", "Grep", "LS", "NotebookRead", "TodoRead"]);
const COMMUNICATION_TOOLS = new Set(["WebFetch", "WebSearch"]);

/**
 * The `safety_level` of an agent's tool, in the tool-executor's effect words: `read`,
 * `communication` (web tools), else `mutation` (shell, writes, edits, MCP tools and any tool not
 * known to only read).
 */
export function safetyLevelOf(toolName: string): "read" | "communication" | "mutation" {
  if (READ_TOOLS.has(toolName)) return "read";
  if (COMMUNICATION_TOOLS.has(toolName)) return "communication";
  return "mutation";
}
