import { type ClaudeCodeHookOutput, ErrorCode, GeodeError, RuntimeEvent } from "@geode/contracts";
import { type EventContext, field } from "./event-context.js";
import { block, NOTHING, stopWith } from "./outputs.js";

/**
 * Stop → the verifier (`{ns}.verify.finalize`, candidate = `last_assistant_message`, termination
 * `natural`, root turn = `prompt_id`), so PreVerify, the built-in checks, PostVerify and Stop
 * handlers all apply: accept → `{}`; revise / continue → `{"decision": "block", "reason":
 * instruction}` (Claude goes on); the verifier's budget (two per root turn) turns the next one into
 * an escalation, which ends the loop: `{"continue": false, "stopReason"}`.
 */
export async function stopEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  const { plane, corr, signal } = ctx;
  const text = field(ctx.input, "last_assistant_message") ?? "";
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
      return stopWith(`${err.message} (geode: the answer of this turn waits for its reviewer)`);
    throw err;
  }
  switch (reply.policy_action) {
    case "accept":
      return NOTHING;
    case "revise":
    case "continue":
      return block(reply.follow_up_instruction ?? "Revise the answer.");
    default:
      return stopWith(
        `geode verification: ${reply.policy_action.replaceAll("_", " ")}; the answer waits for review (built-in checks ${reply.built_in.passed ? "passed" : `missed ${reply.built_in.rubric_misses.join(", ") || "nothing named"}`})`,
      );
  }
}

/** StopFailure (the turn ended on an API error): recorded as `llm_call_failed`. */
export async function stopFailureEvent(ctx: EventContext): Promise<ClaudeCodeHookOutput> {
  const error = ctx.input["error"];
  ctx.plane.emit(
    RuntimeEvent.LLM_CALL_FAILED,
    { agent: "claude-code", error_type: typeof error === "string" ? error.slice(0, 64) : "unknown" },
    ctx.corr,
  );
  return NOTHING;
}
