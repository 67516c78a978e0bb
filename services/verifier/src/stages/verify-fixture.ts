/**
 * What the verifier stage tests share: deps on a real NATS namespace (attempts, sessions, event
 * bus) with the hook-dispatcher replaced by a scripted `invoke`, so each test states the outcome a
 * stage reacts to. The loop with a real dispatcher is tested in test/verify-*.
 */
import { RuntimeEventBus, silentLogger } from "@geode/bus";
import type {
  AttributedDecision,
  DispatchOutcome,
  EventEnvelope,
  HookName,
  TimelineRecord,
} from "@geode/contracts";
import { AttemptStore, SessionStore } from "@geode/state";
import { scriptedOutcome, type TestEnv, useFixture } from "@geode/testing";
import { openVerifyRun, type VerifierDeps, type VerifyRun } from "./verify-run.js";

export type VerifyHookScript = (
  hook: HookName,
  payload: Record<string, unknown>,
) => AttributedDecision[] | { decisions: AttributedDecision[]; blocked: boolean };

export interface VerifyHarness {
  deps: VerifierDeps;
  invoked: Array<{ hook: HookName; payload: Record<string, unknown> }>;
  seen: Array<EventEnvelope | TimelineRecord>;
  script: VerifyHookScript;
  /** Opens a run for a candidate on root turn `s`.`turn` (the attempt is reserved). */
  open(turn: string, text?: string, extra?: Record<string, unknown>): Promise<VerifyRun>;
  stop(): Promise<void>;
}

/** A dispatch outcome as the dispatcher would reply it, from what a script decided. */
export function outcomeOf(
  hook: HookName,
  payload: Record<string, unknown>,
  decided: ReturnType<VerifyHookScript>,
): DispatchOutcome {
  return Array.isArray(decided)
    ? scriptedOutcome(hook, payload, decided)
    : scriptedOutcome(hook, payload, decided.decisions, decided.blocked);
}

async function verifyHarness(env: TestEnv): Promise<VerifyHarness> {
  const { nc, names } = env;
  const events = await RuntimeEventBus.create({ nc, names, source: "verify-test" });
  const seen: VerifyHarness["seen"] = [];
  events.subscribe((e) => {
    seen.push(e);
  });
  events.subscribeTimeline((r) => {
    seen.push(r);
  });
  const invoked: VerifyHarness["invoked"] = [];
  const harness: VerifyHarness = {
    invoked,
    seen,
    script: () => [],
    deps: {
      names,
      log: silentLogger(),
      events,
      invoke: async (hook, payload) => {
        const p = payload as Record<string, unknown>;
        invoked.push({ hook, payload: p });
        return outcomeOf(hook, p, harness.script(hook, p));
      },
      attempts: await AttemptStore.open({ nc, names }),
      sessions: await SessionStore.open({ nc, names }),
    },
    open: (turn, text = "The answer is 42.", extra = {}) =>
      openVerifyRun(harness.deps, {
        correlation: { session_id: "s", turn_id: turn },
        candidate: { text, termination_reason: "natural", rounds: 2, tool_call_count: 1 },
        ...extra,
      }),
    stop: () => events.close(),
  };
  return harness;
}

/** A test file's harness, built once on its own namespace; use the getters inside tests. */
export function useVerifyHarness(): { h: () => VerifyHarness; env: () => TestEnv } {
  const { fixture, env } = useFixture(verifyHarness, (h) => h.stop());
  return { h: fixture, env };
}
