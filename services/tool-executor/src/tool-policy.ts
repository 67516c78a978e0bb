import { toolGlob } from "@geode/contracts";

/** Operator policy: returns why a tool name is denied, or null. A deny is final. */
export type ToolPolicy = (toolName: string) => string | null;

/** Deny list first (always wins), then the allow list (empty = everything allowed). */
export function createToolPolicy(options: { deny: readonly string[]; allow: readonly string[] }): ToolPolicy {
  const denied = toolGlob(options.deny);
  const allowed = options.allow.length > 0 ? toolGlob(options.allow) : () => true;
  return (toolName) => {
    if (denied(toolName)) return `policy: ${toolName} is on the deny list`;
    if (!allowed(toolName)) return `policy: ${toolName} is not on the allow list`;
    return null;
  };
}
