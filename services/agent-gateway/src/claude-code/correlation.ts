import type { ClaudeCodeHookInput, Correlation } from "@geode/contracts";

/** Run ids are one safe path segment (the recorder writes `{runs_dir}/{run_id}/events.jsonl`). */
const RUN_ID = /^(?!\.)[A-Za-z0-9_.-]{1,128}(?<!\.)$/;

/** Each Claude Code session is a run of its own: its id, when it is usable as one, else "". */
function runIdOf(sessionId: string): string {
  return RUN_ID.test(sessionId) ? sessionId : "";
}

/**
 * The correlation of a Claude Code hook call (docs/protocol.md#agent-gateway): `session_id` and
 * `run_id` = Claude Code's `session_id`, `turn_id` = `prompt_id`, `tool_call_id` = `tool_use_id`.
 */
export function correlationOf(input: ClaudeCodeHookInput, generation: number): Correlation {
  const toolUseId = input["tool_use_id"];
  return {
    session_id: input.session_id,
    turn_id: input.prompt_id ?? "",
    step_id: "",
    run_id: runIdOf(input.session_id),
    session_generation: generation,
    verify_attempt: 0,
    tool_call_id: typeof toolUseId === "string" ? toolUseId : "",
    llm_call_id: "",
    llm_attempt_id: "",
  };
}
