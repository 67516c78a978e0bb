import type { OpencodeHookInput, OpencodeHookOutput } from "@geode/contracts";
import type { AgentCall } from "../agent-plane/agent-call.js";
import { postCompact, preCompact } from "../agent-plane/compaction.js";
import { submitPrompt } from "../agent-plane/prompt.js";
import { recordOnly } from "../agent-plane/record-only.js";
import { llmFailed } from "../agent-plane/stop.js";
import { subagentStarted, subagentStopped } from "../agent-plane/subagents.js";
import { agentPermissionPrompt, asObject, postToolUse, preToolUse } from "../agent-plane/tool-use.js";

/** One opencode event, run through the plane and answered in the plugin's output. */
export type OpencodeEvent = (call: AgentCall, input: OpencodeHookInput) => Promise<OpencodeHookOutput>;

const NOTHING: OpencodeHookOutput = {};

/**
 * The session events of a sub-agent's session (opencode's `task` tool) that belong to its parent:
 * its start, its end and its failure are SubagentStart and SubagentStop of the parent session.
 */
const PARENT_EVENTS = new Set(["session.created", "session.idle", "session.error"]);

/** The parent session an event belongs to, when it is a sub-agent session's start or end. */
export const parentOf = (input: OpencodeHookInput): string | undefined =>
  PARENT_EVENTS.has(input.event) ? input.parent_session_id : undefined;

function field(input: OpencodeHookInput, name: string): string | undefined {
  const v = input[name];
  return typeof v === "string" ? v : undefined;
}

const toolUse = (input: OpencodeHookInput) => ({
  tool_name: field(input, "tool") as string,
  args: asObject(input["args"] ?? {}),
});

/** A sub-agent session's facts: its id (the task) and its agent (`task` when opencode names none). */
const subagent = (input: OpencodeHookInput) => ({
  agent_id: input.session_id,
  agent_type: field(input, "agent") ?? "task",
});

/**
 * session.created → the session is created (or resumed: a new generation), then SessionStart
 * runs; a sub-agent's session (`parent_session_id`) → SubagentStart in the parent's session
 * (task = the child session's id, description = the `task` call's, from the session's title).
 */
const sessionCreated: OpencodeEvent = async (call, input) => {
  if (parentOf(input) !== undefined) {
    const agentTitle = ` (@${field(input, "agent") ?? ""} subagent)`;
    const title = field(input, "title") ?? "";
    const description = title.endsWith(agentTitle) ? title.slice(0, -agentTitle.length) : title;
    await subagentStarted(call, { ...subagent(input), description });
    return NOTHING;
  }
  await call.sessions.start(call.agent, call.corr, { source: "startup" }, call.signal);
  return NOTHING;
};

/** session.idle → recorded; a sub-agent's session going idle (its task done) → SubagentStop in the parent's. */
const sessionIdle: OpencodeEvent = async (call, input) => {
  if (parentOf(input) === undefined) return recordOnlyEvent(call, input);
  await subagentStopped(call, { ...subagent(input), success: true });
  return NOTHING;
};

/** session.deleted, instance.disposed → the session is completed, SessionEnd runs, the run is closed. */
const sessionDeleted: OpencodeEvent = async (call, input) => {
  await call.sessions.end(call.agent, call.corr, field(input, "reason") ?? "other", call.signal);
  return NOTHING;
};

/** chat.message → UserPromptSubmit: block → deny (the plugin throws: opencode refuses the prompt). */
const chatMessage: OpencodeEvent = async (call, input) => {
  const verdict = await submitPrompt(call, field(input, "prompt") ?? "");
  if (verdict.action === "block") return { decision: "deny", reason: verdict.reason };
  return NOTHING;
};

/**
 * tool.execute.before → PreToolUse: block → deny with the reason (the plugin throws it; the model
 * reads it as the tool's error); rewrite → `args` (the plugin runs the rewritten arguments);
 * request_permission → PermissionRequest and the approvers: their allow goes on, anything else is
 * a deny (a plugin cannot make opencode ask its user).
 */
const toolExecuteBefore: OpencodeEvent = async (call, input) => {
  const verdict = await preToolUse(call, toolUse(input));
  if (verdict.action === "deny") return { decision: "deny", reason: verdict.reason };
  const { updated, permission } = verdict;
  if (permission && permission.behavior !== "allow")
    return {
      decision: "deny",
      reason: `${permission.reason} (geode: nobody approved this call, and opencode's plugins cannot ask)`,
    };
  return updated ? { args: updated } : NOTHING;
};

/** permission.ask → PermissionRequest (then the approvers): allow or deny; nobody deciding → `{}` (opencode asks its user). */
const permissionAsk: OpencodeEvent = async (call, input) => {
  const verdict = await agentPermissionPrompt(call, toolUse(input));
  if (verdict.behavior === "none") return NOTHING;
  return verdict.behavior === "allow" ? { decision: "allow" } : { decision: "deny", reason: verdict.reason };
};

/**
 * tool.execute.after → PostToolUse (`result` = `{output, title}` or `{error}`): add_context →
 * `context` (appended to the result the model reads); block → `output`: the result is withheld and
 * the model reads the reason instead.
 */
const toolExecuteAfter: OpencodeEvent = async (call, input) => {
  const error = field(input, "error");
  const failed = error !== undefined;
  const verdict = await postToolUse(call, {
    ...toolUse(input),
    result: failed ? { error } : { output: field(input, "output") ?? "", title: field(input, "title") ?? "" },
    failed,
  });
  return {
    ...(verdict.block ? { output: `geode blocked this tool result: ${verdict.block}` } : {}),
    ...(verdict.contexts.length > 0 ? { context: verdict.contexts.join("\n\n") } : {}),
  };
};

/** session.compacting → PreCompact; opencode cannot skip a compaction, so a defer is recorded and compaction goes on. */
const sessionCompacting: OpencodeEvent = async (call, input) => {
  await preCompact(call, { trigger: "auto", model: field(input, "model") });
  return NOTHING;
};

/** session.compacted → PostCompact. */
const sessionCompacted: OpencodeEvent = async (call, input) => {
  await postCompact(call, { trigger: "auto", model: field(input, "model") });
  return NOTHING;
};

/**
 * session.error → `llm_call_failed` (the error text itself is never forwarded); a sub-agent's
 * session → SubagentStop in the parent's, failed (its later idle changes nothing).
 */
const sessionError: OpencodeEvent = async (call, input) => {
  llmFailed(call, "session.error");
  if (parentOf(input) !== undefined) await subagentStopped(call, { ...subagent(input), success: false });
  return NOTHING;
};

/** An event with no public hook (session.idle, any event this gateway does not know): recorded only. */
export const recordOnlyEvent: OpencodeEvent = async (call, input) => {
  recordOnly(call, input.event);
  return NOTHING;
};

/** The mapping of docs/opencode.md, by the plugin's event name. */
export const OPENCODE_HANDLERS: ReadonlyMap<string, OpencodeEvent> = new Map([
  ["session.created", sessionCreated],
  ["chat.message", chatMessage],
  ["tool.execute.before", toolExecuteBefore],
  ["permission.ask", permissionAsk],
  ["tool.execute.after", toolExecuteAfter],
  ["session.compacting", sessionCompacting],
  ["session.compacted", sessionCompacted],
  ["session.error", sessionError],
  ["session.idle", sessionIdle],
  ["session.deleted", sessionDeleted],
  ["instance.disposed", sessionDeleted],
]);
