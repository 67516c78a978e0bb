import { z } from "zod";
import { requestCodec } from "./wire-codec.js";

/**
 * What `geode connect <agent> --check` reports to the gateway at the end of its check, on
 * `POST /v1/<kind>/check` with the agent's token: whether the check passed, and its one line (the
 * `ok:` line, or what is missing). The gateway records it as `adapter_dispatch_attempt` with
 * `hook_event_name` `AGENT_CHECK_EVENT`, so `geode agents ls` and the console show each agent's
 * last check.
 */
export const AgentCheckReportSchema = z.strictObject({
  ok: z.boolean(),
  /** The check's line as it printed it (cut to 512 characters, secrets masked, when recorded). */
  detail: z.string().max(4096),
});
export type AgentCheckReport = z.infer<typeof AgentCheckReportSchema>;
export const AgentCheckReportCodec = requestCodec(AgentCheckReportSchema);

/** The `hook_event_name` of the `adapter_dispatch_attempt` that records a check. */
export const AGENT_CHECK_EVENT = "geode.connect.check";

/** The check endpoint beside an agent kind's hook endpoint: `/v1/<kind>/hook` → `/v1/<kind>/check`. */
export const agentCheckPath = (hookPath: string): string => hookPath.replace(/\/hook$/, "/check");

/**
 * The guarded hooks (those that decide before a tool runs) whose arrival the gateway records per
 * agent, as `adapter_dispatch_attempt` with `guarded: true` (at most once an hour per agent, kind
 * and hook on each replica): `geode agents ls` shows whether they have been seen.
 */
export const GUARDED_TOOL_HOOKS = ["PreToolUse", "PermissionRequest"] as const;
export type GuardedToolHook = (typeof GUARDED_TOOL_HOOKS)[number];
