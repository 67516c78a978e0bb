import { type ClaudeCodeHookInput, type Correlation, isValidRunId, safeCorrelation } from "@geode/contracts";

/**
 * The correlation of a Claude Code hook call (docs/protocol.md#agent-gateway): `session_id` and
 * `run_id` = Claude Code's `session_id`, `turn_id` = `prompt_id`, `tool_call_id` = `tool_use_id`.
 * Every id is made safe first (an id that is too long, holds characters unsafe in keys and paths,
 * or looks like a secret is replaced by a stable digest), and the session is a run of its own
 * when its id is a valid run id.
 */
export function correlationOf(input: ClaudeCodeHookInput, generation: number): Correlation {
  const toolUseId = input["tool_use_id"];
  const safe = safeCorrelation({
    session_id: input.session_id,
    turn_id: input.prompt_id ?? "",
    step_id: "",
    run_id: "",
    session_generation: generation,
    verify_attempt: 0,
    tool_call_id: typeof toolUseId === "string" ? toolUseId : "",
    llm_call_id: "",
    llm_attempt_id: "",
  });
  return { ...safe, run_id: isValidRunId(safe.session_id) ? safe.session_id : "" };
}
