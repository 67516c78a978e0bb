import { decisionReason, HookName, isBlocked, RuntimeEvent } from "@geode/contracts";
import type { AgentCall } from "./agent-call.js";

/** What the plane says of a prompt: send it, block it, or (a rewrite) send another one instead. */
export type PromptVerdict =
  | { action: "go" }
  | { action: "block"; reason: string }
  | { action: "rewrite"; reason: string; prompt: string };

/** A prompt the agent is about to send: `user_input_received` (its length only), then UserPromptSubmit. */
export async function submitPrompt(call: AgentCall, prompt: string): Promise<PromptVerdict> {
  const { plane, corr, signal } = call;
  plane.emit(RuntimeEvent.USER_INPUT_RECEIVED, { chars: [...prompt].length, agent: call.agent.kind }, corr);
  const outcome = await plane.invokeHook(HookName.UserPromptSubmit, { user_input: prompt }, corr, { signal });
  if (isBlocked(outcome)) return { action: "block", reason: decisionReason(outcome, ["block"], "blocked") };
  if (outcome.decisions.some((d) => d.action === "rewrite"))
    return {
      action: "rewrite",
      reason: decisionReason(outcome, ["rewrite"], "rewritten"),
      prompt: String(outcome.payload["user_input"] ?? ""),
    };
  return { action: "go" };
}

/**
 * The refusal of a prompt for an agent that cannot send a changed one (`agent` names it in the
 * reason): a block's reason, or, for a rewrite, a reason that carries the prompt to send instead
 * (the original must not reach the model as it was); null when the prompt goes.
 */
export function promptRefusal(verdict: PromptVerdict, agent: string): string | null {
  if (verdict.action === "block") return verdict.reason;
  if (verdict.action === "rewrite")
    return `${verdict.reason}\nThe prompt was rewritten and ${agent} cannot send a changed prompt, so it was not sent. Send this instead:\n${verdict.prompt}`;
  return null;
}
