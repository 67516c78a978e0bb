import { z } from "zod";
import { FreeObjectSchema } from "./hook-payloads.js";

/** What a remote tool terminal receives on `{ns}.tool.terminal.{tool}` and replies. */
export const ToolTerminalRequestSchema = z.strictObject({
  tool_name: z.string(),
  arguments: FreeObjectSchema,
  correlation: z.record(z.string(), z.unknown()),
});
export const ToolTerminalReplySchema = z.object({ result: FreeObjectSchema, has_error: z.boolean() });
