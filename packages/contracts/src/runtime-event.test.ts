import { describe, expect, it } from "vitest";
import { correlation } from "./correlation.js";
import {
  EventEnvelopeSchema,
  HookEvent,
  isRuntimeEvent,
  RUNTIME_EVENTS,
  RuntimeEvent,
  RuntimeEventSchema,
  retentionBucketOf,
  TIMELINE_KINDS,
  TimelineRecordSchema,
} from "./runtime-event.js";
import { sha256 } from "./sanitize.js";

// The wire contract's event catalog, written out here so a change to RUNTIME_EVENTS must change it too.
const CATALOG = `trigger_fired, post_analysis, memory_saved, rule_changed, result_feedback, prompt_assembled,
subagent_started, subagent_completed, subagent_failed, tool_recovery_attempted,
tool_recovery_succeeded, tool_recovery_failed, turn_completed, context_critical,
context_overflow_action, session_started, session_ended, model_switched, llm_call_started,
llm_call_ended, llm_call_failed, llm_call_retried, tool_approval_requested, approval_transition,
adapter_dispatch_attempt, shutdown_started, config_reloaded, extension_invoked,
tool_result_offloaded, mcp_server_connected, mcp_server_failed, user_input_received,
tool_exec_started, tool_exec_ended, tool_exec_failed, tool_result_transform, cost_warning,
cost_limit_exceeded, execution_cancelled, reasoning_metrics, cognitive_perceive, cognitive_plan,
cognitive_act, cognitive_observe, cognitive_reflect, cognitive_update_memory,
self_improving_auto_trigger, handoff_triggered, turn_verify_passed, turn_verify_failed,
mutation_proposed, mutation_applied, mutation_rejected, mutation_reverted, baseline_promoted,
program_md_unreadable, memory_promotion_proposed`
  .split(",")
  .map((s) => s.trim());

describe("RuntimeEvent", () => {
  it("has exactly the 57 distinct values of the catalog, in order", () => {
    expect(CATALOG).toHaveLength(57);
    expect(new Set(RUNTIME_EVENTS).size).toBe(57);
    expect([...RUNTIME_EVENTS]).toEqual(CATALOG);
    expect(Object.values(RuntimeEvent)).toEqual(CATALOG);
    expect(RuntimeEventSchema.options).toEqual(CATALOG);
  });

  it("keys each value by its upper-case name", () => {
    expect(Object.keys(RuntimeEvent)).toEqual(CATALOG.map((v) => v.toUpperCase()));
    for (const [key, value] of Object.entries(RuntimeEvent)) expect(key).toBe(value.toUpperCase());
    expect(RuntimeEvent.EXTENSION_INVOKED).toBe("extension_invoked");
    expect(Object.isFrozen(RuntimeEvent)).toBe(true);
  });

  it("is aliased as HookEvent for older integrations", () => {
    expect(HookEvent).toBe(RuntimeEvent);
    const alias: HookEvent = HookEvent.TOOL_EXEC_FAILED;
    expect(isRuntimeEvent(alias)).toBe(true);
    expect(isRuntimeEvent("tool_exec_exploded")).toBe(false);
  });

  it("round-trips every value through the event envelope", () => {
    for (const event of RUNTIME_EVENTS) {
      const envelope = {
        id: `evt-${event}`,
        event,
        ts: 1_700_000_000_000,
        source: "test",
        correlation: correlation({ session_id: "s-1" }),
        payload: { n: 1 },
      };
      const parsed = EventEnvelopeSchema.parse(JSON.parse(JSON.stringify(envelope)));
      expect(parsed).toEqual(envelope);
    }
  });

  it("refuses an unknown event, an empty id and extra envelope fields", () => {
    const base = {
      id: "e",
      event: "turn_completed",
      ts: 1,
      source: "s",
      correlation: correlation(),
      payload: {},
    };
    expect(EventEnvelopeSchema.safeParse(base).success).toBe(true);
    expect(EventEnvelopeSchema.safeParse({ ...base, event: "TURN_COMPLETED" }).success).toBe(false);
    expect(EventEnvelopeSchema.safeParse({ ...base, id: "" }).success).toBe(false);
    expect(EventEnvelopeSchema.safeParse({ ...base, extra: 1 }).success).toBe(false);
  });

  it("puts extension_invoked in the 180-day audit bucket", () => {
    expect(retentionBucketOf("extension_invoked")).toBe("audit");
    for (const e of RUNTIME_EVENTS) expect(["audit", "ops", "debug"]).toContain(retentionBucketOf(e));
  });
});

describe("timeline records", () => {
  it("have exactly the kinds of the wire contract", () => {
    expect([...TIMELINE_KINDS]).toEqual([
      "session.started",
      "session.ended",
      "verification.decided",
      "verification.continued",
      "verification.pending",
      "verification.evidence",
      "tool.called",
      "tool.completed",
      "subagent.started",
      "subagent.stopped",
      "governance.gap",
      "mcp.read",
    ]);
  });

  it("round-trip through TimelineRecordSchema and refuse an unknown kind", () => {
    for (const kind of TIMELINE_KINDS) {
      const payload = { kind };
      const record = {
        id: `tl-${kind}`,
        kind,
        ts: 1,
        source: "verifier",
        correlation: correlation({ turn_id: "t" }),
        payload,
        payload_sha256: sha256(payload),
      };
      expect(TimelineRecordSchema.parse(JSON.parse(JSON.stringify(record)))).toEqual(record);
    }
    const bad = {
      id: "x",
      kind: "tool.exploded",
      ts: 1,
      source: "s",
      correlation: correlation(),
      payload: {},
    };
    expect(TimelineRecordSchema.safeParse({ ...bad, payload_sha256: sha256({}) }).success).toBe(false);
  });
});
