import {
  GEMINI_CLI_EVENTS,
  GEMINI_CLI_HOOK_PATH,
  type GeminiCliHookInput,
  GeminiCliHookInputCodec,
  type GeminiCliHookOutput,
  sha256,
} from "@geode/contracts";
import type { AgentAdapter } from "../agent-adapter.js";
import type { AgentCall } from "../agent-plane/agent-call.js";
import { claudeStyleHandlers, recordOnlyEvent } from "../agent-plane/claude-style-events.js";
import { preCompact } from "../agent-plane/compaction.js";
import { promptRefusal, submitPrompt } from "../agent-plane/prompt.js";
import { verifyStop } from "../agent-plane/stop.js";
import { asObject, postToolUse, preToolUse } from "../agent-plane/tool-use.js";

type GeminiEvent = (call: AgentCall, input: GeminiCliHookInput) => Promise<GeminiCliHookOutput>;

const GUARDED: ReadonlySet<string> = new Set(GEMINI_CLI_EVENTS.filter((e) => e.guards).map((e) => e.event));
const NOTHING: GeminiCliHookOutput = {};

/** `{"decision": "deny", "reason"}`: the prompt, the tool call or the tool's result is refused. */
const deny = (reason: string): GeminiCliHookOutput => ({ decision: "deny", reason });

function text(input: GeminiCliHookInput, name: string): string | undefined {
  const v = input[name];
  return typeof v === "string" ? v : undefined;
}

/**
 * BeforeAgent → UserPromptSubmit (`user_input` = prompt): block → deny (Gemini drops the prompt).
 * Gemini cannot take a changed prompt, so a rewrite refuses the original too and the reason
 * carries the rewritten prompt to send instead.
 */
const beforeAgent: GeminiEvent = async (call, input) => {
  const refusal = promptRefusal(await submitPrompt(call, text(input, "prompt") ?? ""), "Gemini CLI");
  return refusal === null ? NOTHING : deny(refusal);
};

/**
 * BeforeTool → PreToolUse: block → deny (the model reads "Tool execution blocked: <reason>");
 * rewrite → `hookSpecificOutput.tool_input`, which Gemini merges over the model's arguments (it
 * cannot drop one, so a rewrite that removes an argument is a deny naming it); request_permission
 * → PermissionRequest and the approvers: allow, else a deny (a hook cannot ask Gemini's user).
 */
const beforeTool: GeminiEvent = async (call, input) => {
  const args = asObject(input["tool_input"]);
  const verdict = await preToolUse(call, { tool_name: input["tool_name"] as string, args });
  if (verdict.action === "deny") return deny(verdict.reason);
  if (verdict.permission?.behavior === "ask")
    return deny(
      `${verdict.permission.reason} (nobody answered, and Gemini CLI cannot ask its user from a hook)`,
    );
  const { updated } = verdict;
  if (!updated) return NOTHING;
  const dropped = Object.keys(args).filter((k) => !Object.hasOwn(updated, k));
  if (dropped.length > 0)
    return deny(
      `${verdict.rewriteReason ?? "rewritten"} (the rewrite removes ${dropped.join(", ")}, which Gemini CLI cannot drop from a call; run the rewritten call instead)`,
    );
  return { hookSpecificOutput: { hookEventName: "BeforeTool", tool_input: updated } };
};

/**
 * AfterTool → PostToolUse (`result` = `tool_response`: `llmContent`, `returnDisplay`, `error`;
 * failed when `error` is set): add_context → `hookSpecificOutput.additionalContext` (appended to
 * the result the model reads); block → deny (the result is replaced by the reason).
 */
const afterTool: GeminiEvent = async (call, input) => {
  const response = asObject(input["tool_response"]);
  const failed = response["error"] !== undefined && response["error"] !== null;
  const verdict = await postToolUse(call, {
    tool_name: input["tool_name"] as string,
    args: asObject(input["tool_input"]),
    result: response,
    failed,
  });
  if (verdict.block) return deny(verdict.block);
  if (verdict.contexts.length === 0) return NOTHING;
  return {
    hookSpecificOutput: { hookEventName: "AfterTool", additionalContext: verdict.contexts.join("\n\n") },
  };
};

/**
 * AfterAgent → the verifier (candidate = `prompt_response`): accept → `{}`; revise / continue →
 * deny with the instruction, which Gemini sends as the next prompt of the turn; an escalation
 * (the budget of two per root turn spent, among others) → `{"continue": false, "stopReason"}`.
 */
const afterAgent: GeminiEvent = async (call, input) => {
  const verdict = await verifyStop(call, text(input, "prompt_response") ?? "");
  if (verdict.action === "accept") return NOTHING;
  return verdict.action === "revise"
    ? deny(verdict.instruction)
    : { continue: false, stopReason: verdict.reason };
};

/** PreCompress → PreCompact (advisory in Gemini: a defer is recorded and compression goes on). */
const preCompress: GeminiEvent = async (call, input) => {
  await preCompact(call, { trigger: text(input, "trigger") ?? "auto" });
  return NOTHING;
};

const SHARED = claudeStyleHandlers({ rewrite: "always", unanswered: "deny", defer: "ignore" });
const HANDLERS: ReadonlyMap<string, GeminiEvent> = new Map([
  ["SessionStart", SHARED.SessionStart as GeminiEvent],
  ["BeforeAgent", beforeAgent],
  ["BeforeTool", beforeTool],
  ["AfterTool", afterTool],
  ["AfterAgent", afterAgent],
  ["PreCompress", preCompress],
  ["SessionEnd", SHARED.SessionEnd as GeminiEvent],
]);

/**
 * The turn of a prompt: Gemini names none, but its BeforeAgent and every AfterAgent of a turn
 * (the revisions included) carry the turn's original prompt, so its digest is the turn (and the
 * verifier's budget is per prompt). Other events belong to no turn.
 */
function turnOf(input: GeminiCliHookInput): string | undefined {
  const event = input.hook_event_name;
  const prompt = text(input, "prompt");
  if ((event !== "BeforeAgent" && event !== "AfterAgent") || prompt === undefined) return undefined;
  return `prompt-${sha256(prompt).slice(0, 32)}`;
}

/**
 * Gemini CLI (docs/gemini-cli.md): its command hooks POST their stdin to `/v1/gemini-cli/hook`;
 * `session_id` and `run_id` = its `session_id`; `turn_id` = a digest of the turn's prompt; it
 * names no tool call, so PreToolUse gives each call an id its result is matched to (tool-calls.ts).
 */
export const geminiCliAdapter: AgentAdapter<GeminiCliHookInput, GeminiCliHookOutput> = {
  kind: "gemini-cli",
  path: GEMINI_CLI_HOOK_PATH,
  provider: "google",
  parse: (body) => GeminiCliHookInputCodec.decode(body),
  eventOf: (input) => input.hook_event_name,
  ids: (input) => ({ session_id: input.session_id, turn_id: turnOf(input) }),
  startsSession: (input) => input.hook_event_name === "SessionStart",
  handle: async (call, input) =>
    (HANDLERS.get(input.hook_event_name) ?? (recordOnlyEvent as GeminiEvent))(call, input),
  unavailable: (event, message) =>
    GUARDED.has(event)
      ? deny(`geode: the extension plane could not decide (${message}); a guarded call is refused`)
      : NOTHING,
};
