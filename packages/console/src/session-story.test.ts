import { describe, expect, it } from "vitest";
import {
  type StoryEvent,
  type StoryInvocation,
  type StoryRecord,
  type StoryRows,
  storySteps,
} from "./session-story.js";

const T0 = 1_700_000_000_000;
const session = { agent_kind: "claude-code" as const, started_at: T0 };

let seq = 0;
const event = (e: Partial<StoryEvent> & Pick<StoryEvent, "event">): StoryEvent => ({
  seq: ++seq,
  ts: T0 + seq,
  turn_id: "",
  tool_call_id: "",
  llm_call_id: "",
  run_id: "r",
  payload: {},
  ...e,
});
const audit = (
  a: Partial<StoryInvocation> & Pick<StoryInvocation, "name" | "extension" | "status">,
): StoryInvocation => ({
  seq: ++seq,
  ts: T0 + seq,
  latency_ms: 2,
  turn_id: "",
  tool_call_id: "",
  step_id: "",
  run_id: "r",
  reason: null,
  ...a,
});
const record = (r: Partial<StoryRecord> & Pick<StoryRecord, "kind">): StoryRecord => ({
  seq: ++seq,
  ts: T0 + seq,
  turn_id: "",
  tool_call_id: "",
  run_id: "r",
  record_id: `rec-${seq}`,
  payload: {},
  ...r,
});
const rows = (r: Partial<StoryRows>): StoryRows => ({ events: [], invocations: [], records: [], ...r });

describe("storySteps", () => {
  it("shows each model call once with its model, tokens and cost, and a refused call with its budget", () => {
    const ended = { provider: "oai", model: "gpt-5", stream: true };
    const usage = { input_tokens: 12, cached_input_tokens: 2, output_tokens: 8, cost_usd: 0.0001 };
    const steps = storySteps(
      rows({
        events: [
          event({ event: "llm_call_started", llm_call_id: "l1", turn_id: "t1", payload: ended }),
          event({
            event: "llm_call_ended",
            llm_call_id: "l1",
            payload: { ...ended, ...usage, duration_ms: 40, status: 200 },
          }),
          event({ event: "llm_call_started", llm_call_id: "l2", payload: ended }),
          event({
            event: "llm_call_failed",
            llm_call_id: "l2",
            payload: { ...ended, ...usage, cost_usd: 0, duration_ms: 5, status: 502, error: "unreachable" },
          }),
          event({ event: "llm_call_started", llm_call_id: "l3", payload: ended }),
          event({
            event: "cost_limit_exceeded",
            llm_call_id: "l4",
            payload: {
              provider: "oai",
              model: "gpt-5",
              budget: "agent.laptop",
              window: "1h",
              reason: "limit_usd",
            },
          }),
          event({
            event: "cost_limit_exceeded",
            llm_call_id: "l4",
            payload: {
              provider: "oai",
              model: "gpt-5",
              budget: "group.devs",
              window: "1d",
              reason: "limit_usd",
            },
          }),
        ],
      }),
      session,
    );
    expect(steps.map((s) => [s.kind, s.verdict, s.decided_by, s.outcome, s.llm?.status])).toEqual([
      ["llm_call", "allowed", null, "ended", 200],
      ["llm_call", "allowed", null, "failed", 502],
      ["llm_call", "allowed", null, "running", null],
      ["llm_call", "refused", "agent.laptop", "not run", 429],
    ]);
    expect(steps[0]).toMatchObject({
      turn_id: "t1",
      duration_ms: 40,
      llm: { provider: "oai", model: "gpt-5", ...usage, stream: true, budget: null },
    });
    expect(steps[1]?.reason).toBe("unreachable");
    expect(steps[2]?.llm).toMatchObject({ input_tokens: null, cost_usd: null });
    expect(steps[3]?.reason).toBe("limit_usd, window 1h");
  });

  it("names who decided each tool call: a handler's block, a person's approval or denial, a handler's deny, nobody", () => {
    const steps = storySteps(
      rows({
        invocations: [
          audit({ name: "PreToolUse", extension: "guard", status: "block", tool_call_id: "c1" }),
          audit({ name: "PermissionRequest", extension: "perm", status: "deny", tool_call_id: "c4" }),
        ],
        events: [
          event({ event: "tool_exec_started", tool_call_id: "c2", payload: { tool_name: "Bash" } }),
          event({
            event: "approval_transition",
            tool_call_id: "c2",
            payload: { decision: "allow", approver: "ana" },
          }),
          event({
            event: "approval_transition",
            tool_call_id: "c3",
            payload: { tool_name: "Write", decision: "deny", approver: "bo" },
          }),
          event({
            event: "approval_transition",
            tool_call_id: "c5",
            payload: { tool_name: "Edit", decision: "none", source: "timeout" },
          }),
          event({
            event: "tool_exec_ended",
            tool_call_id: "c2",
            payload: { duration_ms: 42, outcome: "ok" },
          }),
        ],
      }),
      session,
    );
    const byCall = new Map(steps.map((s) => [s.tool_call_id, s]));
    expect(byCall.get("c1")).toMatchObject({
      verdict: "blocked",
      decided_by: "guard",
      tool_name: null,
      outcome: "not run",
    });
    expect(byCall.get("c2")).toMatchObject({
      verdict: "approved",
      decided_by: "ana",
      tool_name: "Bash",
      tool_kind: "shell",
      duration_ms: 42,
    });
    expect(byCall.get("c3")).toMatchObject({ verdict: "denied", decided_by: "bo", tool_kind: "file_write" });
    expect(byCall.get("c4")).toMatchObject({ verdict: "denied", decided_by: "perm" });
    expect(byCall.get("c5")).toMatchObject({ verdict: "denied", decided_by: "nobody answered" });
    expect([...byCall.values()].every((s) => s.reason === null)).toBe(true);
  });

  it("names the tool of a call refused at PreToolUse, and why, from its refusal record", () => {
    const why = `guard: rm -rf is not allowed here ${"x".repeat(600)}`;
    const steps = storySteps(
      rows({
        invocations: [
          audit({ name: "PreToolUse", extension: "guard", status: "block", tool_call_id: "c1" }),
          audit({ name: "PreToolUse", extension: "guard", status: "ok", tool_call_id: "c2" }),
        ],
        records: [
          record({
            kind: "tool.completed",
            tool_call_id: "c1",
            payload: {
              tool_name: "Bash",
              status: "blocked",
              has_error: false,
              executed: false,
              reason: why,
              target: "rm -rf /srv/data",
            },
          }),
          record({
            kind: "tool.completed",
            tool_call_id: "c2",
            payload: {
              tool_name: "Read",
              status: "completed",
              has_error: false,
              executed: true,
              reason: "x",
            },
          }),
        ],
      }),
      session,
    );
    const byCall = new Map(steps.map((s) => [s.tool_call_id, s]));
    expect(byCall.get("c1")).toMatchObject({
      verdict: "blocked",
      decided_by: "guard",
      tool_name: "Bash",
      tool_kind: "shell",
      outcome: "not run",
      reason: why.slice(0, 512),
      target: "rm -rf /srv/data",
    });
    // Only a refusal says why.
    expect(byCall.get("c2")).toMatchObject({
      verdict: "allowed",
      outcome: "completed",
      reason: null,
      target: null,
    });
  });

  it("tells prompts by length and verdict, never their text, and times steps from the session's start", () => {
    const steps = storySteps(
      rows({
        events: [
          event({
            event: "user_input_received",
            turn_id: "p1",
            payload: { chars: 12, text: "secret words" },
          }),
        ],
        invocations: [
          audit({
            name: "UserPromptSubmit",
            extension: "pii",
            status: "block",
            turn_id: "p1",
            reason: "the prompt names a customer's card number",
          }),
          audit({ name: "UserPromptSubmit", extension: "pii", status: "ok", turn_id: "p2" }),
        ],
        records: [
          record({
            kind: "verification.decided",
            payload: {
              policy_action: "revise",
              passed: false,
              decisions: [{ handler: "ci", action: "revise" }],
            },
          }),
          record({ kind: "subagent.stopped", payload: { task_type: "research", success: false } }),
        ],
      }),
      session,
    );
    expect(steps.map((s) => [s.kind, s.verdict, s.decided_by])).toEqual([
      ["prompt", "blocked", "pii"],
      ["prompt", "allowed", null],
      ["verification", "revise", "ci"],
      ["subagent", "failed", null],
    ]);
    expect(steps[0]).toMatchObject({ length: 12, reason: "the prompt names a customer's card number" });
    expect(steps[1]).toMatchObject({ reason: null });
    expect(JSON.stringify(steps)).not.toContain("secret words");
    expect(steps.map((s) => s.at_ms)).toEqual(steps.map((s) => s.ts - T0));
  });

  it("shows what a call acted on from its records, and why a handler, the policy or a person denied it", () => {
    const steps = storySteps(
      rows({
        invocations: [
          audit({
            name: "PermissionRequest",
            extension: "perm",
            status: "deny",
            tool_call_id: "d1",
            reason: "no writes under /etc",
          }),
        ],
        events: [
          event({
            event: "approval_transition",
            tool_call_id: "d3",
            payload: { tool_name: "Write", decision: "deny", approver: "bo" },
          }),
        ],
        records: [
          record({
            kind: "tool.completed",
            tool_call_id: "d2",
            payload: {
              tool_name: "shell.exec",
              status: "denied",
              executed: false,
              reason: "shell.* is denied by GEODE_TOOL_DENY",
              target: "curl https://x.test",
            },
          }),
          record({
            kind: "tool.completed",
            tool_call_id: "d3",
            payload: {
              tool_name: "Write",
              status: "denied",
              executed: false,
              reason: "approval denied by bo: no",
            },
          }),
          record({
            kind: "tool.called",
            tool_call_id: "a1",
            payload: { tool_name: "Bash", effect: "mutation", target: "ls -la" },
          }),
          record({
            kind: "tool.completed",
            tool_call_id: "a1",
            payload: { tool_name: "Bash", status: "completed" },
          }),
        ],
      }),
      session,
    );
    const byCall = new Map(steps.map((s) => [s.tool_call_id, s]));
    expect(byCall.get("d1")).toMatchObject({
      verdict: "denied",
      decided_by: "perm",
      reason: "no writes under /etc",
      outcome: "not run",
    });
    expect(byCall.get("d2")).toMatchObject({
      verdict: "denied",
      decided_by: "policy",
      reason: "shell.* is denied by GEODE_TOOL_DENY",
      target: "curl https://x.test",
      tool_kind: "other",
    });
    expect(byCall.get("d3")).toMatchObject({
      verdict: "denied",
      decided_by: "bo",
      reason: "approval denied by bo: no",
    });
    expect(byCall.get("a1")).toMatchObject({ verdict: "allowed", target: "ls -la", reason: null });
  });

  it("gives one row to a call of an agent that names no call: its records share the id the gateway gave it", () => {
    const gemini = { agent_kind: "gemini-cli" as const, started_at: T0 };
    const blocked = "0107b6bd-0416-9828-e4b7-721d2e30a922";
    const ran = "0a1a06b2-7417-03ad-1228-7dec5b9dd6d8";
    const steps = storySteps(
      rows({
        events: [
          event({ event: "user_input_received", turn_id: "prompt-1", payload: { chars: 12 } }),
          event({
            event: "tool_exec_started",
            tool_call_id: ran,
            payload: { tool_name: "run_shell_command" },
          }),
          event({ event: "tool_exec_ended", tool_call_id: ran, payload: { outcome: "ok" } }),
        ],
        invocations: [
          audit({ name: "UserPromptSubmit", extension: "policy", status: "ok", turn_id: "prompt-1" }),
          audit({ name: "PreToolUse", extension: "policy", status: "block", tool_call_id: blocked }),
          audit({ name: "PreToolUse", extension: "policy", status: "ok", tool_call_id: ran }),
          audit({ name: "PostToolUse", extension: "policy", status: "ok", tool_call_id: ran }),
        ],
        records: [
          record({
            kind: "tool.completed",
            tool_call_id: blocked,
            payload: {
              tool_name: "run_shell_command",
              status: "blocked",
              executed: false,
              target: "rm -rf x",
            },
          }),
          record({
            kind: "tool.called",
            tool_call_id: ran,
            payload: { tool_name: "run_shell_command", target: "touch y" },
          }),
          record({
            kind: "tool.completed",
            tool_call_id: ran,
            payload: { tool_name: "run_shell_command", status: "completed", executed: true },
          }),
        ],
      }),
      gemini,
    );
    expect(steps).toHaveLength(3);
    expect(steps.filter((s) => s.kind === "prompt")).toHaveLength(1);
    const byCall = new Map(steps.map((s) => [s.tool_call_id, s]));
    expect(byCall.get(blocked)).toMatchObject({
      tool_name: "run_shell_command",
      verdict: "blocked",
      decided_by: "policy",
      target: "rm -rf x",
    });
    expect(byCall.get(ran)).toMatchObject({
      tool_name: "run_shell_command",
      verdict: "allowed",
      target: "touch y",
      outcome: "completed",
    });
  });

  it("marks a call whose result reached the plane without its PreToolUse as a governance gap", () => {
    const steps = storySteps(
      rows({
        records: [
          record({
            kind: "governance.gap",
            tool_call_id: "g1",
            payload: { agent: "laptop", agent_kind: "codex", tool_name: "Bash", missing: "PreToolUse" },
          }),
          record({ kind: "tool.called", tool_call_id: "g1", payload: { tool_name: "Bash", target: "ls" } }),
          record({
            kind: "tool.completed",
            tool_call_id: "g1",
            payload: { status: "completed", executed: true },
          }),
          record({ kind: "tool.called", tool_call_id: "ok1", payload: { tool_name: "Bash" } }),
        ],
        invocations: [audit({ name: "PreToolUse", extension: "guard", status: "ok", tool_call_id: "ok1" })],
      }),
      session,
    );
    const byCall = new Map(steps.map((s) => [s.tool_call_id, s]));
    expect(steps).toHaveLength(2);
    expect(byCall.get("g1")).toMatchObject({ governance_gap: true, tool_name: "Bash", outcome: "completed" });
    expect(byCall.get("ok1")).toMatchObject({ governance_gap: false });
  });

  it("says the agent allowed a call nobody answered on the plane when it then ran", () => {
    const steps = storySteps(
      rows({
        events: [
          event({
            event: "approval_transition",
            tool_call_id: "n1",
            payload: { decision: "none", source: "timeout" },
          }),
          event({ event: "tool_exec_ended", tool_call_id: "n1", payload: { outcome: "ok" } }),
          event({
            event: "approval_transition",
            tool_call_id: "n2",
            payload: { decision: "none", source: "timeout" },
          }),
        ],
      }),
      session,
    );
    const byCall = new Map(steps.map((s) => [s.tool_call_id, s]));
    expect(byCall.get("n1")).toMatchObject({ verdict: "allowed", decided_by: "the agent (nobody answered)" });
    expect(byCall.get("n2")).toMatchObject({ verdict: "denied", decided_by: "nobody answered" });
  });

  it("names an MCP call by its server and tool, from its records or an agent's MCP tool name", () => {
    const mcpSession = { agent_kind: "mcp" as const, started_at: T0 };
    const steps = storySteps(
      rows({
        records: [
          record({
            kind: "tool.called",
            tool_call_id: "m1",
            payload: {
              tool_name: "fs_write_file",
              effect: "mutation",
              target: "/srv/notes.txt",
              mcp: { server: "fs", tool: "write_file" },
            },
          }),
          record({
            kind: "tool.completed",
            tool_call_id: "m1",
            payload: { tool_name: "fs_write_file", status: "completed", executed: true },
          }),
          record({
            kind: "tool.completed",
            tool_call_id: "m2",
            payload: {
              tool_name: "fs_move_file",
              status: "blocked",
              executed: false,
              reason: "guard: no moving",
              target: "/srv/a, /srv/b",
              mcp: { server: "fs", tool: "move_file" },
            },
          }),
          // Not an MCP tool: a bad server name in its record, and a name without the agents' form.
          record({
            kind: "tool.called",
            tool_call_id: "m3",
            payload: { tool_name: "echo", mcp: { server: "Bad Server", tool: "x" } },
          }),
          record({
            kind: "tool.called",
            tool_call_id: "m4",
            payload: { tool_name: "fs_long", mcp: { server: "fs", tool: "t".repeat(300) } },
          }),
        ],
        invocations: [audit({ name: "PreToolUse", extension: "guard", status: "block", tool_call_id: "m2" })],
      }),
      mcpSession,
    );
    const byCall = new Map(steps.map((s) => [s.tool_call_id, s]));
    expect(byCall.get("m1")).toMatchObject({
      tool_name: "fs_write_file",
      tool_kind: "mcp",
      mcp: { server: "fs", tool: "write_file" },
      target: "/srv/notes.txt",
      verdict: "allowed",
      outcome: "completed",
    });
    expect(byCall.get("m2")).toMatchObject({
      tool_kind: "mcp",
      mcp: { server: "fs", tool: "move_file" },
      target: "/srv/a, /srv/b",
      verdict: "blocked",
      decided_by: "guard",
      reason: "guard: no moving",
    });
    expect(byCall.get("m3")).toMatchObject({ mcp: null, tool_kind: "other" });
    expect(byCall.get("m4")?.mcp?.tool).toBe("t".repeat(128));
    // A Claude Code session's own MCP tool: the name spells the server and the tool.
    const [agent] = storySteps(
      rows({
        records: [
          record({
            kind: "tool.called",
            tool_call_id: "a1",
            payload: { tool_name: "mcp__github__create_issue" },
          }),
        ],
      }),
      session,
    );
    expect(agent).toMatchObject({ tool_kind: "mcp", mcp: { server: "github", tool: "create_issue" } });
    // Every other step has none.
    const [bash] = storySteps(
      rows({
        records: [record({ kind: "tool.called", tool_call_id: "b1", payload: { tool_name: "Bash" } })],
      }),
      session,
    );
    expect(bash).toMatchObject({ tool_kind: "shell", mcp: null });
  });
});
