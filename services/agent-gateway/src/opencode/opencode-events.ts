import type { OpencodeHookInput, OpencodeHookOutput } from "@geode/contracts";
import type { AgentCall } from "../agent-plane/agent-call.js";
import { postCompact, preCompact } from "../agent-plane/compaction.js";
import { submitPrompt } from "../agent-plane/prompt.js";
import { recordOnly } from "../agent-plane/record-only.js";
import { llmFailed } from "../agent-plane/stop.js";
import { agentPermissionPrompt, asObject, postToolUse, preToolUse } from "../agent-plane/tool-use.js";

/** One opencode event, run through the plane and answered in the plugin's output. */
export type OpencodeEvent = (call: AgentCall, input: OpencodeHookInput) => Promise<OpencodeHookOutput>;

const NOTHING: OpencodeHookOutput = {};

function field(input: OpencodeHookInput, name: string): string | undefined {
  const v = input[name];
  return typeof v === "string" ? v : undefined;
}

const toolUse = (input: OpencodeHookInput) => ({
  tool_name: field(input, "tool") as string,
  args: asObject(input["args"] ?? {}),
});

/** session.created → the session is created (or resumed: a new generation), then SessionStart runs. */
const sessionCreated: OpencodeEvent = async (call) => {
  await call.sessions.start(call.agent, call.corr, { source: "startup" }, call.signal);
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

/** session.error → `llm_call_failed` (the error text itself is never forwarded). */
const sessionError: OpencodeEvent = async (call) => {
  llmFailed(call, "session.error");
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
  ["session.idle", recordOnlyEvent],
  ["session.deleted", sessionDeleted],
  ["instance.disposed", sessionDeleted],
]);
