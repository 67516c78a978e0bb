import { ErrorCode, GeodeError, RuntimeEvent } from "@geode/contracts";
import type { AgentCall } from "./agent-call.js";

/**
 * What the verifier says of the agent's answer: deliver it, go on with an instruction (a revise
 * or a Stop handler's continue), or stop and wait for review (an escalation, the budget spent,
 * a turn already parked).
 */
export type StopVerdict =
  | { action: "accept" }
  | { action: "revise"; instruction: string }
  | { action: "stop"; reason: string };

/**
 * The agent wants to stop with `text`: the verifier (`{ns}.verify.finalize`, termination
 * `natural`, root turn = the call's turn), so PreVerify, the built-in checks, PostVerify and Stop
 * handlers all apply; the verifier's budget (two per root turn) turns the next revise into an
 * escalation, which ends the loop.
 */
export async function verifyStop(call: AgentCall, text: string): Promise<StopVerdict> {
  const { plane, corr, signal } = call;
  let reply: Awaited<ReturnType<typeof plane.finalize>>;
  try {
    reply = await plane.finalize(
      {
        correlation: corr,
        candidate: { text, termination_reason: "natural", rounds: 1, tool_call_count: 0 },
      },
      { signal },
    );
  } catch (err) {
    if (err instanceof GeodeError && err.code === ErrorCode.SessionPaused)
      return {
        action: "stop",
        reason: `${err.message} (geode: the answer of this turn waits for its reviewer)`,
      };
    throw err;
  }
  switch (reply.policy_action) {
    case "accept":
      return { action: "accept" };
    case "revise":
    case "continue":
      return { action: "revise", instruction: reply.follow_up_instruction ?? "Revise the answer." };
    default: {
      const checks = reply.built_in.passed
        ? "passed"
        : `missed ${reply.built_in.rubric_misses.join(", ") || "nothing named"}`;
      return {
        action: "stop",
        reason: `geode verification: ${reply.policy_action.replaceAll("_", " ")}; the answer waits for review (built-in checks ${checks})`,
      };
    }
  }
}

/** The turn ended on an API error (Claude Code's StopFailure): recorded as `llm_call_failed`. */
export function llmFailed(call: AgentCall, error: unknown): void {
  call.plane.emit(
    RuntimeEvent.LLM_CALL_FAILED,
    { agent: call.agent.kind, error_type: typeof error === "string" ? error.slice(0, 64) : "unknown" },
    call.corr,
  );
}
