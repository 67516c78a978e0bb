import type { AgentKind } from "@geode/contracts";

/** Which agent a hook call comes from: its kind, its name on the plane (its token's), its model provider. */
export interface AgentIdentity {
  kind: AgentKind;
  /** The name the call's bearer token belongs to (`geode agents add NAME`). */
  name: string;
  /** The agent's model provider (`anthropic`, `openai`, …), as sessions record it. */
  provider: string;
}
