import {
  type CopilotHookInput,
  type CopilotHookOutput,
  copilotRefusal,
  wellFormedJsonText,
} from "@geode/contracts";
import type { AgentCall } from "../agent-plane/agent-call.js";
import { preCompact } from "../agent-plane/compaction.js";
import { submitPrompt } from "../agent-plane/prompt.js";
import { recordOnly } from "../agent-plane/record-only.js";
import { llmFailed, verifyStop } from "../agent-plane/stop.js";
import { subagentStarted, subagentStopped } from "../agent-plane/subagents.js";
import { agentPermissionPrompt, asObject, postToolUse, preToolUse } from "../agent-plane/tool-use.js";

/** One Copilot event, run through the plane and answered in Copilot's native output. */
export type CopilotEvent = (call: AgentCall, input: CopilotHookInput) => Promise<CopilotHookOutput>;

const NOTHING: CopilotHookOutput = {};

function field(input: CopilotHookInput, name: string): string | undefined {
  const v = input[name];
  return typeof v === "string" ? v : undefined;
}

/** Copilot's tool arguments: an object (a JSON text of one is read as it, valid Unicode as any body). */
function toolArgs(value: unknown): Record<string, unknown> {
  if (typeof value === "string") {
    try {
      return asObject(JSON.parse(wellFormedJsonText(value)));
    } catch {
      return asObject(value);
    }
  }
  return asObject(value);
}

const toolUse = (input: CopilotHookInput, argsField = "toolArgs") => ({
  tool_name: field(input, "toolName") as string,
  args: toolArgs(input[argsField]),
});

/** The preToolUse refusal Copilot reads (it blocks even with --allow-all-tools; the model reads the reason). */
const denyTool = (reason: string): CopilotHookOutput => copilotRefusal("preToolUse", reason);

/** sessionStart → the session is created (or resumed: a new generation), then SessionStart runs. */
const sessionStart: CopilotEvent = async (call, input) => {
  await call.sessions.start(call.agent, call.corr, { source: field(input, "source") }, call.signal);
  return NOTHING;
};

/** sessionEnd → the session is completed (reason: Copilot's), SessionEnd runs, the run is closed. */
const sessionEnd: CopilotEvent = async (call, input) => {
  await call.sessions.end(call.agent, call.corr, field(input, "reason") ?? "other", call.signal);
  return NOTHING;
};

/** userPromptSubmitted → UserPromptSubmit: block → `{"decision": "block", "reason"}`; rewrite → `modifiedPrompt`. */
const userPromptSubmitted: CopilotEvent = async (call, input) => {
  const verdict = await submitPrompt(call, field(input, "prompt") ?? "");
  if (verdict.action === "block") return { decision: "block", reason: verdict.reason };
  if (verdict.action === "rewrite") return { modifiedPrompt: verdict.prompt };
  return NOTHING;
};

/**
 * preToolUse → PreToolUse: block → deny with the reason; rewrite → `modifiedArgs` (Copilot takes it
 * alone, and still asks its permission for the rewritten call: a rewrite grants nothing);
 * request_permission → PermissionRequest and the approvers: their allow or deny, or `ask` when
 * nobody decided (Copilot asks its user; a run without one refuses the call).
 */
const preToolUseEvent: CopilotEvent = async (call, input) => {
  const verdict = await preToolUse(call, toolUse(input));
  if (verdict.action === "deny") return denyTool(verdict.reason);
  const { updated, permission } = verdict;
  return {
    ...(permission
      ? { permissionDecision: permission.behavior, permissionDecisionReason: permission.reason }
      : {}),
    ...(updated ? { modifiedArgs: updated } : {}),
  };
};

/** permissionRequest → PermissionRequest (then the approvers): `{"behavior", "message"}`; nobody deciding → `{}`. */
const permissionRequest: CopilotEvent = async (call, input) => {
  const verdict = await agentPermissionPrompt(call, toolUse(input, "toolInput"));
  if (verdict.behavior === "none") return NOTHING;
  return verdict.behavior === "allow" ? { behavior: "allow" } : { behavior: "deny", message: verdict.reason };
};

/**
 * postToolUse / postToolUseFailure → PostToolUse (`result` = Copilot's `toolResult`, or the error):
 * add_context → `additionalContext`; Copilot's output has no block, so a block reaches the model
 * as context too, naming itself.
 */
const postToolUseEvent: CopilotEvent = async (call, input) => {
  const failed = input.hookName === "postToolUseFailure";
  const verdict = await postToolUse(call, {
    ...toolUse(input),
    result: failed ? { error: field(input, "error") ?? "the tool failed" } : asObject(input["toolResult"]),
    failed,
  });
  const contexts = [
    ...(verdict.block ? [`geode blocked this tool result: ${verdict.block}`] : []),
    ...verdict.contexts,
  ];
  return contexts.length > 0 ? { additionalContext: contexts.join("\n\n") } : NOTHING;
};

/**
 * agentStop → the verifier, the candidate being `lastAssistantMessage` (which the hook command adds
 * from Copilot's transcript; Copilot's own input has no answer text): revise / continue →
 * `{"decision": "block", "reason": instruction}` (Copilot goes on with it as the next prompt);
 * accept, or an escalation (Copilot stops anyway; the turn waits for review) → `{}`. Without the
 * text the stop is recorded only: an empty candidate would always be revised.
 */
const agentStop: CopilotEvent = async (call, input) => {
  const text = field(input, "lastAssistantMessage");
  if (text === undefined) {
    recordOnly(call, input.hookName, { stop_reason: field(input, "stopReason") ?? "" });
    return NOTHING;
  }
  const verdict = await verifyStop(call, text);
  return verdict.action === "revise" ? { decision: "block", reason: verdict.instruction } : NOTHING;
};

const subagent = (input: CopilotHookInput) => ({
  agent_id: field(input, "agentId") ?? (field(input, "agentName") as string),
  agent_type: field(input, "agentType") ?? field(input, "agentName") ?? "",
});

/** subagentStart → SubagentStart (task = Copilot's agent id, else its name). */
const subagentStart: CopilotEvent = async (call, input) => {
  await subagentStarted(call, { ...subagent(input), description: field(input, "agentDescription") });
  return NOTHING;
};

/** subagentStop → SubagentStop (the sub-agent's response is never forwarded). */
const subagentStop: CopilotEvent = async (call, input) => {
  await subagentStopped(call, subagent(input));
  return NOTHING;
};

/** preCompact → PreCompact; Copilot cannot skip a compaction, so a defer is recorded and compaction goes on. */
const preCompactEvent: CopilotEvent = async (call, input) => {
  await preCompact(call, { trigger: field(input, "trigger") ?? "auto" });
  return NOTHING;
};

/**
 * errorOccurred → a runtime event: `llm_call_failed` for a model call, else recorded with its
 * context. The error text itself is never forwarded.
 */
const errorOccurred: CopilotEvent = async (call, input) => {
  const context = field(input, "errorContext") ?? "system";
  if (context === "model_call") llmFailed(call, context);
  else recordOnly(call, input.hookName, { error_context: context });
  return NOTHING;
};

/** An event with no public hook (userPromptTransformed, notification, any event this gateway does not know): recorded only. */
export const recordOnlyEvent: CopilotEvent = async (call, input) => {
  recordOnly(call, input.hookName);
  return NOTHING;
};

/** The mapping of docs/copilot.md, by Copilot's event name. */
export const COPILOT_HANDLERS: ReadonlyMap<string, CopilotEvent> = new Map([
  ["sessionStart", sessionStart],
  ["userPromptSubmitted", userPromptSubmitted],
  ["preToolUse", preToolUseEvent],
  ["permissionRequest", permissionRequest],
  ["postToolUse", postToolUseEvent],
  ["postToolUseFailure", postToolUseEvent],
  ["agentStop", agentStop],
  ["subagentStart", subagentStart],
  ["subagentStop", subagentStop],
  ["preCompact", preCompactEvent],
  ["sessionEnd", sessionEnd],
  ["errorOccurred", errorOccurred],
  ["userPromptTransformed", recordOnlyEvent],
  ["notification", recordOnlyEvent],
]);
