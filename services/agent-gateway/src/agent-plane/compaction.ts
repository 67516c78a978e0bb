import { decisionReason, HookName } from "@geode/contracts";
import type { AgentCall } from "./agent-call.js";

/** What an agent reports of a compaction; counts it does not report are 0. */
export interface Compaction {
  trigger: string;
  model?: string | undefined;
  message_count?: number | undefined;
}

/**
 * The agent is about to compact its context: PreCompact. A `defer` comes back as the reason to
 * skip this compaction; agents take no changed compaction parameters, so a rewrite is recorded
 * and compaction goes on as planned.
 */
export async function preCompact(call: AgentCall, c: Compaction): Promise<{ defer?: string }> {
  const outcome = await call.plane.invokeHook(
    HookName.PreCompact,
    {
      model: c.model ?? "",
      provider: call.agent.provider,
      message_count: c.message_count ?? 0,
      keep_recent: 0,
      trigger: c.trigger,
      hard: false,
    },
    call.corr,
    { signal: call.signal },
  );
  return outcome.decisions.some((d) => d.action === "defer")
    ? { defer: decisionReason(outcome, ["defer"], "compaction deferred") }
    : {};
}

/** The agent compacted its context: PostCompact (the summary itself is never forwarded). */
export async function postCompact(call: AgentCall, c: Compaction): Promise<void> {
  await call.plane.invokeHook(
    HookName.PostCompact,
    {
      model: c.model ?? "",
      provider: call.agent.provider,
      original_message_count: c.message_count ?? 0,
      new_message_count: 0,
      keep_recent: 0,
      trigger: c.trigger,
      persisted: true,
    },
    call.corr,
    { signal: call.signal },
  );
}
