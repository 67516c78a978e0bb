import { requestJson } from "@geode/bus";
import { GeodeError, HookName, SessionRecordSchema, type VerifyReply } from "@geode/contracts";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import { createVerifyClient, followUpContext, type VerifyClient } from "@geode/runtime";
import type { HookEnvelope } from "@geode/sdk";
import { useTestEnv } from "@geode/testing";
import { type RunningVerifier, startVerifier } from "@geode/verifier";
import { Kvm } from "@nats-io/kv";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { HandlerScope, startDispatcher } from "./hooks-support.js";
import { candidate, rootTurn, timelineOf } from "./verify-support.js";

const env = useTestEnv();
let dispatcher: HookDispatcher;
let verifier: RunningVerifier;
let verify: VerifyClient;
let scope: HandlerScope;

beforeAll(async () => {
  const { nc, names } = env();
  dispatcher = await startDispatcher(env());
  verifier = await startVerifier({ nc, names });
  verify = createVerifyClient({ nc, names });
  scope = new HandlerScope(env(), [dispatcher]);
});
afterEach(async () => {
  await scope.close();
});
afterAll(async () => {
  await verifier?.stop();
  await dispatcher?.stop();
});

const sessionRecord = async (sessionId: string) => {
  const kv = await new Kvm(env().nc).open(env().names.buckets.sessions);
  const e = await kv.get(env().names.sessionKey(sessionId));
  return e && e.operation === "PUT" ? SessionRecordSchema.parse(e.json()) : null;
};

/** The one `verification.decided` record of a root turn. */
const decidedFor = async (turnId: string) => {
  const found = (await timelineOf(env().jsm, env().names.timelineStream)).filter(
    (r) => r.kind === "verification.decided" && r.correlation.turn_id === turnId,
  );
  expect(found).toHaveLength(1);
  return found[0]!;
};

describe("verification without handlers (the default policy)", () => {
  it("accepts and delivers a passing candidate", async () => {
    const corr = rootTurn();
    const r = await verify.finalize({ correlation: corr, candidate: candidate("The answer is 42.") });
    expect(r).toMatchObject({
      policy_action: "accept",
      deliver: true,
      verify_attempt: 0,
      built_in: { passed: true, mode: "rule_based", score: 1, rubric_misses: [], should_retry: false },
    });
    expect(r.pending_text).toBeUndefined();
    expect(r.follow_up_instruction).toBeUndefined();
    expect(followUpContext(r)).toBeNull();
  });

  it("revises a retryable failure with the default instruction naming the misses", async () => {
    const corr = rootTurn();
    const r = await verify.finalize({
      correlation: corr,
      candidate: candidate("no number here"),
      rubric: { required: ["\\d+"] },
    });
    expect(r.policy_action).toBe("revise");
    expect(r.deliver).toBe(false);
    expect(r.built_in).toMatchObject({ passed: false, rubric_misses: ["missing:\\d+"], should_retry: true });
    expect(r.follow_up_instruction).toContain("/\\d+/");
    expect(followUpContext(r)).toMatchObject({ role: "system" });
    const decided = await decidedFor(corr.turn_id);
    expect(decided.payload["decisions"]).toEqual([
      expect.objectContaining({ surface: "PostVerify", handler: "runtime_default", action: "revise" }),
    ]);
  });

  it("escalates a failure that a retry cannot fix, parks the candidate and pauses the session", async () => {
    const corr = rootTurn();
    const r = await verify.finalize({
      correlation: corr,
      candidate: candidate("partial work", { termination_reason: "max_rounds" }),
    });
    expect(r).toMatchObject({ policy_action: "escalate", deliver: false, pending_text: "partial work" });
    expect(r.built_in.rubric_misses).toEqual(["termination:max_rounds"]);
    expect(await sessionRecord(corr.session_id)).toMatchObject({
      status: "paused",
      reason: "external_verification_required",
    });
  });
});

describe("verification hooks", () => {
  it("PreVerify strengthen turns a pass into a revise", async () => {
    await scope.serve(HookName.PreVerify, { name: "citations" }, () => ({
      action: "strengthen",
      additional_misses: ["cite_a_source"],
      reason: "citations are required",
    }));
    const r = await verify.finalize({ correlation: rootTurn(), candidate: candidate("The answer is 42.") });
    expect(r.policy_action).toBe("revise");
    expect(r.built_in).toMatchObject({ passed: false, rubric_misses: ["cite_a_source"], should_retry: true });
    expect(r.follow_up_instruction).toContain("cite_a_source");
  });

  it("a strengthen with only an instruction is a handler error and changes nothing", async () => {
    await scope.serve(HookName.PreVerify, { name: "vague" }, () => ({
      action: "strengthen",
      instruction: "be more careful",
    }));
    const corr = rootTurn();
    const r = await verify.finalize({ correlation: corr, candidate: candidate("The answer is 42.") });
    expect(r).toMatchObject({
      policy_action: "accept",
      deliver: true,
      built_in: { passed: true, rubric_misses: [] },
    });
    const decided = await decidedFor(corr.turn_id);
    const surfaces = (decided.payload["decisions"] as { surface: string }[]).map((d) => d.surface);
    expect(surfaces).not.toContain("PreVerify");
    expect(decided.payload["handler_error_count"]).toBe(1);
  });

  it("a PostVerify accept of a failed built-in result escalates", async () => {
    await scope.serve(HookName.PostVerify, { name: "lenient" }, () => ({
      action: "accept",
      reason: "fine by me",
    }));
    const corr = rootTurn();
    const r = await verify.finalize({ correlation: corr, candidate: candidate("") });
    expect(r.built_in.passed).toBe(false);
    expect(r).toMatchObject({ policy_action: "escalate", deliver: false, pending_text: "" });
    const decided = await decidedFor(corr.turn_id);
    expect(decided.payload["decisions"]).toEqual([
      {
        surface: "PostVerify",
        handler: "lenient",
        action: "accept",
        reason: "fine by me",
        instruction_sha256: null,
        instruction_bytes: 0,
        evidence_refs: [],
      },
    ]);
  });

  it("a PostVerify revise carries its instruction; the decision records only its digest and size", async () => {
    const instruction = "Add the unit (meters) to every number.";
    await scope.serve(HookName.PostVerify, { name: "units" }, () => ({ action: "revise", instruction }));
    const corr = rootTurn();
    const r = await verify.finalize({ correlation: corr, candidate: candidate("It is 42.") });
    expect(r).toMatchObject({ policy_action: "revise", follow_up_instruction: instruction });
    const decided = await decidedFor(corr.turn_id);
    const [d] = decided.payload["decisions"] as Record<string, unknown>[];
    expect(d).toMatchObject({ handler: "units", action: "revise", instruction_bytes: instruction.length });
    expect(d?.["instruction_sha256"]).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(decided)).not.toContain(instruction);
  });

  it("three revisions of one root turn: the third is escalate_budget_exhausted, totals sum every attempt", async () => {
    await scope.serve(HookName.PostVerify, { name: "picky" }, () => ({
      action: "revise",
      instruction: "try again",
    }));
    const corr = rootTurn();
    const replies: VerifyReply[] = [];
    for (let i = 1; i <= 3; i++) {
      replies.push(
        await verify.finalize({
          // the runtime's word on the attempt is ignored: the verifier counts
          correlation: { ...corr, verify_attempt: 0 },
          candidate: candidate(`draft ${i}`, {
            rounds: i,
            tool_call_count: 2 * i,
            usage: { input_tokens: 100 * i, output_tokens: 10 * i },
          }),
        }),
      );
    }
    expect(replies.map((r) => [r.verify_attempt, r.policy_action])).toEqual([
      [0, "revise"],
      [1, "revise"],
      [2, "escalate_budget_exhausted"],
    ]);
    expect(replies[2]?.follow_up_instruction).toBeUndefined();
    expect(replies[2]?.pending_text).toBe("draft 3");
    expect(replies[2]?.totals).toEqual({
      rounds: 6,
      tool_call_count: 12,
      usage: { input_tokens: 600, output_tokens: 60 },
    });
    expect(replies[0]?.totals.rounds).toBe(1);
    expect(replies[1]?.totals.rounds).toBe(3);
  });

  it("Stop continue turns an accept into continue, but is ignored after an escalation", async () => {
    const seen: HookEnvelope[] = [];
    await scope.serve(HookName.Stop, { name: "keep-going" }, (envelope) => {
      seen.push(envelope);
      return { action: "continue", instruction: "also run the tests" };
    });
    const ok = await verify.finalize({ correlation: rootTurn(), candidate: candidate("done") });
    expect(ok).toMatchObject({
      policy_action: "continue",
      deliver: false,
      follow_up_instruction: "also run the tests",
    });

    const corr = rootTurn();
    const bad = await verify.finalize({
      correlation: corr,
      candidate: candidate("stuck", { termination_reason: "cancelled" }),
    });
    expect(bad).toMatchObject({ policy_action: "escalate", deliver: false, pending_text: "stuck" });
    expect(bad.follow_up_instruction).toBeUndefined();
    expect(seen.at(-1)?.payload).toMatchObject({ policy_action: "escalate", passed: false });
    const decided = await decidedFor(corr.turn_id);
    expect(decided.payload["ignored_decisions"]).toEqual([
      { surface: "Stop", handler: "keep-going", action: "continue" },
    ]);
  });

  it("hooks see a bounded summary of the candidate and the verifier's attempt number", async () => {
    const seen: HookEnvelope[] = [];
    await scope.serve(HookName.PostVerify, { name: "observer" }, (envelope) => {
      seen.push(envelope);
      return null;
    });
    const long = "x".repeat(1000);
    await verify.finalize({ correlation: rootTurn(), candidate: candidate(long) });
    const summary = seen[0]?.payload["candidate_summary"] as string;
    expect(summary.startsWith("x".repeat(280))).toBe(true);
    expect(summary).toContain("[truncated:720]");
    expect(seen[0]?.correlation.verify_attempt).toBe(0);
  });
});

describe("the delivery gate", () => {
  it("escalation pauses without ending the session; resolve delivers the parked candidate once", async () => {
    const corr = rootTurn();
    const text = "A risky answer that needs a human.";
    const parked = await verify.finalize({
      correlation: corr,
      candidate: candidate(text, { termination_reason: "error" }),
    });
    expect(parked).toMatchObject({ policy_action: "escalate", pending_text: text, deliver: false });
    expect(await sessionRecord(corr.session_id)).toMatchObject({ status: "paused" });

    // the runtime cannot go around the gate with another finalize
    const again = await verify
      .finalize({ correlation: corr, candidate: candidate("something else") })
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(GeodeError);
    expect((again as GeodeError).code).toBe("session_paused");

    const timeline = await timelineOf(env().jsm, env().names.timelineStream);
    const mine = timeline.filter((r) => r.correlation.session_id === corr.session_id);
    expect(mine.map((r) => r.kind)).toContain("verification.pending");
    expect(mine.map((r) => r.kind)).not.toContain("session.ended");

    const delivered = await verify.resolve({ correlation: corr, action: "deliver" });
    expect(delivered).toMatchObject({
      policy_action: "accept",
      deliver: true,
      pending_text: text,
      verify_attempt: 0,
      candidate_sha256: parked.candidate_sha256,
    });
    expect(await sessionRecord(corr.session_id)).toMatchObject({ status: "active", reason: "" });

    const twice = await verify.resolve({ correlation: corr, action: "deliver" }).catch((e: unknown) => e);
    expect((twice as GeodeError).code).toBe("invalid_request");
  });

  it("resolve revise hands the owner's instruction back and reopens the turn", async () => {
    const corr = rootTurn();
    await verify.finalize({ correlation: corr, candidate: candidate("", { termination_reason: "error" }) });
    const noInstruction = await verify
      .resolve({ correlation: corr, action: "revise" })
      .catch((e: unknown) => e);
    expect((noInstruction as GeodeError).code).toBe("invalid_request");
    const r = await verify.resolve({
      correlation: corr,
      action: "revise",
      instruction: "Answer in one line.",
    });
    expect(r).toMatchObject({
      policy_action: "revise",
      deliver: false,
      follow_up_instruction: "Answer in one line.",
    });
    const next = await verify.finalize({ correlation: corr, candidate: candidate("One line.") });
    expect(next).toMatchObject({ policy_action: "accept", verify_attempt: 1 });
  });

  it("a request without a root turn is still counted (under the empty ids), never unbounded", async () => {
    const a = await verify.finalize({ candidate: candidate("") });
    const b = await verify.finalize({ candidate: candidate("") });
    expect([a.verify_attempt, b.verify_attempt]).toEqual([0, 1]);
  });

  it("resolving a turn that is not parked is refused", async () => {
    const err = await verify.resolve({ correlation: rootTurn(), action: "deliver" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GeodeError);
    expect((err as GeodeError).code).toBe("invalid_request");
  });
});

describe("bad wire input", () => {
  it("gets an error reply with a wire error code, changes nothing, and the verifier keeps serving", async () => {
    const { nc, names } = env();
    const corr = rootTurn();
    const bad: unknown[] = [
      { correlation: corr },
      { correlation: { ...corr, bogus: 1 }, candidate: candidate("x") },
      { correlation: { ...corr, verify_attempt: -1 }, candidate: candidate("x") },
      { correlation: corr, candidate: { ...candidate("x"), text: 42 } },
      { correlation: corr, candidate: candidate("x"), mode: "strict" },
      { correlation: corr, candidate: candidate("x"), rubric: { required: ["(unclosed"] } },
      { correlation: corr, candidate: { ...candidate("x"), rounds: -1 } },
    ];
    for (const body of bad) {
      const err = await requestJson(nc, names.verifyFinalize, body, { timeoutMs: 5_000 }).catch(
        (e: unknown) => e,
      );
      expect(err, JSON.stringify(body)).toBeInstanceOf(GeodeError);
      expect((err as GeodeError).code).toBe("invalid_request");
    }
    const notJson = await nc.request(names.verifyFinalize, "{nope", { timeout: 5_000 });
    expect(notJson.json()).toMatchObject({ error: { code: "invalid_request" } });
    const badResolve = await requestJson(
      nc,
      names.verifyResolve,
      { correlation: corr, action: "approve" },
      {
        timeoutMs: 5_000,
      },
    ).catch((e: unknown) => e);
    expect((badResolve as GeodeError).code).toBe("invalid_request");

    // nothing was counted: the first real attempt of this root turn is still attempt 0
    const ok = await verify.finalize({ correlation: corr, candidate: candidate("fine") });
    expect(ok).toMatchObject({ policy_action: "accept", verify_attempt: 0 });
  });
});

describe("without a hook-dispatcher", () => {
  it("a finalize replies unavailable and gives its attempt back (run last: stops the dispatcher)", async () => {
    await dispatcher.stop();
    const corr = rootTurn();
    const err = await verify
      .finalize({ correlation: corr, candidate: candidate("fine") })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GeodeError);
    expect((err as GeodeError).code).toBe("unavailable");
    const kv = await new Kvm(env().nc).open(env().names.buckets.verify);
    const entry = await kv.get(env().names.verifyKey(corr.session_id, corr.turn_id));
    expect(entry).not.toBeNull();
    expect((entry!.json() as { attempts: unknown[] }).attempts).toEqual([]);
  });
});
