import { z } from "zod";

const int = z.number().int();
const count = int.min(0);

/** An agent's last `geode connect <kind> --check` that reached the gateway. */
const ConsoleAgentCheckSchema = z.strictObject({
  at: int,
  agent_kind: z.string(),
  ok: z.boolean(),
  /** The check's line: its `ok:` line, or what is missing (bounded, secrets masked). */
  detail: z.string(),
});

/** `GET /api/agents`: one gateway agent, with what the projection knows of it. */
const ConsoleAgentSchema = z.strictObject({
  name: z.string(),
  created_at: int,
  groups: z.array(z.string()),
  /** The agent kinds its sessions were. */
  kinds: z.array(z.string()),
  /** Its latest record, epoch ms; null when it has none. */
  last_seen: int.nullable(),
  sessions: count,
  last_check: ConsoleAgentCheckSchema.nullable(),
  /** The guarded hooks (PreToolUse, PermissionRequest) the gateway has seen it send: none means ungoverned. */
  guarded_hooks: z.array(z.string()),
});
export type ConsoleAgent = z.infer<typeof ConsoleAgentSchema>;

export const ConsoleAgentsSchema = z.strictObject({ items: z.array(ConsoleAgentSchema) });
export type ConsoleAgents = z.infer<typeof ConsoleAgentsSchema>;
