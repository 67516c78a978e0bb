import type { HookName } from "./hook-name.js";
import type { HookPayloadInput } from "./hook-payloads.js";

const verify = {
  passed: false,
  mode: "rule_based",
  score: 0.5,
  rubric_misses: ["missing:tests"],
  termination_reason: "natural",
  rounds: 3,
  tool_call_count: 2,
  candidate_summary: "Adds the retry loop and its tests.",
};

const EXAMPLES: { [H in HookName]: HookPayloadInput<H> } = {
  UserPromptSubmit: { user_input: "Summarise the last build log." },
  PreToolUse: { tool_name: "fs.read", arguments: { path: "build.log", max_bytes: 65536 } },
  PermissionRequest: { tool_name: "shell", safety_level: "mutation", detail: "rm -rf dist" },
  PostToolUse: {
    tool_name: "fs.read",
    arguments: { path: "build.log" },
    result: { content: "ok: 12 passed", bytes: 13 },
    has_error: false,
    executed: true,
  },
  PreCompact: {
    model: "claude-sonnet",
    provider: "anthropic",
    message_count: 120,
    keep_recent: 20,
    trigger: "auto",
    hard: false,
  },
  PostCompact: {
    model: "claude-sonnet",
    provider: "anthropic",
    original_message_count: 120,
    new_message_count: 21,
    keep_recent: 20,
    trigger: "auto",
    persisted: true,
  },
  SessionStart: { model: "claude-sonnet", provider: "anthropic", resumed: false, status: "active" },
  SessionEnd: { reason: "user_exit", status: "completed" },
  SubagentStart: {
    task_id: "t-1",
    task_type: "research",
    description: "Find the flaky test.",
    child_session_key: "s-1/t-1",
    parent_session_key: "s-1",
    generation: 1,
  },
  SubagentStop: {
    task_id: "t-1",
    task_type: "research",
    success: true,
    status: "completed",
    duration_ms: 1520.5,
    error: "",
    child_session_key: "s-1/t-1",
    generation: 1,
  },
  PreVerify: {
    termination_reason: "natural",
    rounds: 3,
    tool_call_count: 2,
    candidate_summary: "Adds the retry loop and its tests.",
  },
  PostVerify: { ...verify, effective_mode: "rule_based", should_retry: true },
  Stop: {
    ...verify,
    policy_action: "revise",
    evidence_refs: [
      {
        kind: "runtime_event",
        schema_id: "geode.runtime-event.v1",
        authority: "verifier",
        reference: "evt-1",
      },
    ],
  },
};

/**
 * A small valid payload for each hook, as a fresh copy per call: for documentation, tests and
 * benchmarks. Real payloads come from the agent runtime.
 */
export function exampleHookPayload<H extends HookName>(hook: H): HookPayloadInput<H> {
  return structuredClone(EXAMPLES[hook]);
}
