import { describe, expect, it } from "vitest";
import { builtIn } from "./built-in.js";
import { type Decided, decisionRecords, deliver } from "./deliver.js";
import { postVerify } from "./post-verify.js";
import { preVerify } from "./pre-verify.js";
import { stop } from "./stop.js";
import { useVerifyHarness } from "./verify-fixture.js";

const { h } = useVerifyHarness();

/** The stages before deliver, with the hooks as scripted. */
async function decide(turn: string, text: string, extra: Record<string, unknown> = {}) {
  const run = await h().open(turn, text, extra);
  const pre = await preVerify(run);
  const checked = builtIn(run, pre);
  const post = await postVerify(run, checked);
  const decided: Decided = { pre, checked, post, stop: await stop(run, pre, checked, post) };
  return { run, decided };
}
const timelineOf = (turn: string) =>
  h().seen.flatMap((r) => ("kind" in r && r.payload["root_turn"] === turn ? [r.kind] : []));

describe("deliver stage", () => {
  it("accept: the turn is delivered with its final checkpoint; the runtime gets deliver: true", async () => {
    h().script = () => [];
    const { run, decided } = await decide("ok", "fine");
    const reply = await deliver(run, decided);
    expect(reply).toMatchObject({ policy_action: "accept", deliver: true, verify_attempt: 0 });
    expect(reply).not.toHaveProperty("pending_text");
    expect(reply.totals).toEqual({
      rounds: 2,
      tool_call_count: 1,
      usage: { input_tokens: 0, output_tokens: 0 },
    });
    const turn = await h().deps.attempts.get("s", "ok");
    expect(turn).toMatchObject({
      status: "delivered",
      final: { attempt: 0, policy_action: "accept", resolved_by: "verifier" },
    });
    expect(turn?.attempts[0]).toMatchObject({ state: "decided", policy_action: "accept" });
    expect(timelineOf("ok")).toEqual(["verification.decided", "verification.evidence"]);
    expect(h().seen.some((e) => "event" in e && e.event === "turn_verify_passed")).toBe(true);
  });

  it("revise: the instruction goes to the runtime once, the timeline keeps only its digest", async () => {
    h().script = (hook) =>
      hook === "PostVerify" ? [{ handler: "critic", action: "revise", instruction: "add units" }] : [];
    const { run, decided } = await decide("again", "fine");
    const reply = await deliver(run, decided);
    expect(reply).toMatchObject({
      policy_action: "revise",
      deliver: false,
      follow_up_instruction: "add units",
    });
    expect(timelineOf("again")).toEqual(["verification.decided", "verification.continued"]);
    const continued = h().seen.find((r) => "kind" in r && r.kind === "verification.continued");
    expect(JSON.stringify(continued)).not.toContain("add units");
    expect((await h().deps.attempts.get("s", "again"))?.status).toBe("open");
  });

  it("escalate parks the candidate for its owner: turn parked with the text, session paused", async () => {
    h().script = (hook) =>
      hook === "PostVerify" ? [{ handler: "judge", action: "escalate", reason: "legal" }] : [];
    const { run, decided } = await decide("gate", "the contract says…");
    const reply = await deliver(run, decided);
    expect(reply).toMatchObject({
      policy_action: "escalate",
      deliver: false,
      pending_text: "the contract says…",
    });
    expect(await h().deps.attempts.get("s", "gate")).toMatchObject({
      status: "parked",
      pending: { attempt: 0, text: "the contract says…", policy_action: "escalate" },
      final: { policy_action: "escalate" },
    });
    expect(await h().deps.sessions.get("s")).toMatchObject({
      status: "paused",
      reason: "external_verification_required",
    });
    expect(timelineOf("gate")).toEqual([
      "verification.decided",
      "verification.pending",
      "verification.evidence",
    ]);
    await expect(h().open("gate")).rejects.toMatchObject({ code: "session_paused" });
  });

  it("records the runtime's own fallback when PostVerify had no decision", async () => {
    h().script = () => [];
    const { decided } = await decide("records", "");
    expect(decisionRecords(decided)).toMatchObject([
      {
        surface: "PostVerify",
        handler: "runtime_default",
        action: "revise",
        instruction_bytes: expect.any(Number),
      },
    ]);
  });
});
