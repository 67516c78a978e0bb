import {
  type ClaudeCodeHookOutput,
  decisionReason,
  HookName,
  isBlocked,
  RuntimeEvent,
} from "@geode/contracts";
import { type EventContext, field } from "./event-context.js";
import { block, NOTHING } from "./outputs.js";

/**
 * UserPromptSubmit → UserPromptSubmit (`user_input` = prompt): block → `{"decision": "block",
 * "reason"}`. Claude Code cannot take a changed prompt, so a rewrite blocks the original too (it
 * must not reach the model as it was) and the reason carries the rewritten prompt to send instead.
 */
export async function userPromptSubmitEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  const { plane, corr, signal } = ctx;
  const prompt = field(ctx.input, "prompt") ?? "";
  plane.emit(RuntimeEvent.USER_INPUT_RECEIVED, { chars: [...prompt].length, agent: "claude-code" }, corr);
  const outcome = await plane.invokeHook(HookName.UserPromptSubmit, { user_input: prompt }, corr, { signal });
  if (isBlocked(outcome)) return block(decisionReason(outcome, ["block"], "blocked"));
  if (outcome.decisions.some((d) => d.action === "rewrite")) {
    const rewritten = String(outcome.payload["user_input"] ?? "");
    return block(
      `${decisionReason(outcome, ["rewrite"], "rewritten")}\nThe prompt was rewritten and Claude Code cannot send a changed prompt, so it was not sent. Send this instead:\n${rewritten}`,
    );
  }
  return NOTHING;
}
