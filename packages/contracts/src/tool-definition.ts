import { z } from "zod";
import { FreeObjectSchema } from "./hook-payloads.js";
import { McpToolOriginSchema } from "./mcp.js";
import { TOOL_NAME_PATTERN } from "./names.js";

const ToolEffectSchema = z.enum(["read", "mutation", "communication", "admin"]);
export type ToolEffect = z.infer<typeof ToolEffectSchema>;
const ToolNameSchema = z.string().regex(TOOL_NAME_PATTERN, "tool names match [A-Za-z0-9_.-]{1,64}");

/** A tool definition (built-in, or remote in KV `{ns}_tools`). */
export const ToolDefinitionSchema = z.strictObject({
  name: ToolNameSchema,
  description: z.string(),
  input_schema: FreeObjectSchema,
  effect: ToolEffectSchema,
  requires_approval: z.boolean(),
  timeout_ms: z.number().int().min(0).optional(),
  /** An MCP tool's upstream (registered by the mcp-bridge, DESIGN section 19). */
  mcp: McpToolOriginSchema.optional(),
});
export type ToolDefinition = z.infer<typeof ToolDefinitionSchema>;
