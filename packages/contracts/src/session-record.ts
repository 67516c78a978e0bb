import { z } from "zod";
import { AgentKindSchema, AgentNameSchema } from "./agent-record.js";

const SessionStatusSchema = z.enum(["active", "paused", "completed", "error"]);
export type SessionStatus = z.infer<typeof SessionStatusSchema>;

/** A session as the plane keeps it (KV `{ns}_sessions`, key = its id as a key token). */
export const SessionRecordSchema = z.strictObject({
  status: SessionStatusSchema,
  reason: z.string(),
  generation: z.number().int().min(0),
  model: z.string(),
  provider: z.string(),
  updated_at: z.number().int(),
  /** The gateway's agent (the name its token belongs to) whose session this is. */
  agent: AgentNameSchema.optional(),
  agent_kind: AgentKindSchema.optional(),
});
export type SessionRecord = z.infer<typeof SessionRecordSchema>;
