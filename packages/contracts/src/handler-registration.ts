import { z } from "zod";
import { HookNameSchema, SchemaVersionSchema } from "./hook-name.js";
import { HANDLER_NAME_PATTERN } from "./names.js";

/* A hook handler's registration: KV `{ns}_hook_handlers`, key `{HookName}.{handler}`. */

export const FailureModeSchema = z.enum(["open", "closed"]);
export type FailureMode = z.infer<typeof FailureModeSchema>;
export const HandlerNameSchema = z
  .string()
  .regex(HANDLER_NAME_PATTERN, "handler names match [A-Za-z0-9_-]{1,64}");
/** Tool-name globs, e.g. `{"tool_name": ["fs.*", "shell"]}`. */
export const HandlerMatchSchema = z.strictObject({ tool_name: z.array(z.string().min(1)).min(1).max(64) });
export type HandlerMatch = z.infer<typeof HandlerMatchSchema>;

export const HandlerRegistrationSchema = z.strictObject({
  hook: HookNameSchema,
  name: HandlerNameSchema,
  priority: z.number().int(),
  timeout_ms: z.number().int().min(0),
  schema_version: SchemaVersionSchema,
  failure_mode: FailureModeSchema,
  match: HandlerMatchSchema.nullable().optional(),
  heartbeat_at: z.number().int(),
  lease_ms: z.number().int().positive(),
});
export type HandlerRegistration = z.infer<typeof HandlerRegistrationSchema>;
