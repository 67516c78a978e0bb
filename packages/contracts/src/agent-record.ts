import { z } from "zod";
import { AGENT_NAME_PATTERN, POLICY_SET_NAME_PATTERN } from "./names.js";

/* Agents allowed to call the agent gateway: KV `{ns}_agents`, key = the agent's name. */

export const AgentNameSchema = z
  .string()
  .regex(AGENT_NAME_PATTERN, "agent names match [a-z0-9][a-z0-9_-]{0,63}");
/** The kinds of coding agent the gateway governs (a runtime's own sessions name none). */
export const AgentKindSchema = z.enum([
  "claude-code",
  "codex",
  "gemini-cli",
  "copilot",
  "qwen-code",
  "opencode",
  "mcp",
]);
export type AgentKind = z.infer<typeof AgentKindSchema>;

/** A group of agents that policies name (`Geode::Group::"<group>"`). */
export const AgentGroupSchema = z
  .string()
  .regex(POLICY_SET_NAME_PATTERN, "group names match [a-z0-9][a-z0-9_-]{0,63}");

/** An agent allowed to call the agent gateway: its bearer token is kept only as a SHA-256 hex digest. */
export const AgentRecordSchema = z.strictObject({
  name: AgentNameSchema,
  token_sha256: z.string().regex(/^[0-9a-f]{64}$/, "token_sha256 is a SHA-256 hex digest"),
  created_at: z.number().int(),
  /** The groups policies see the agent in (`geode agents add NAME --group G`). */
  groups: z.array(AgentGroupSchema).max(32).optional(),
});
export type AgentRecord = z.infer<typeof AgentRecordSchema>;
