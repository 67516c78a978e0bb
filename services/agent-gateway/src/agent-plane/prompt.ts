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
