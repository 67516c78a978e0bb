import { describe, expect, it } from "vitest";
import { parsePolicyReason, policyAnswer, policyTestResult } from "./policy-answer.js";
import type { PolicyDecision, PolicyEvaluation } from "./policy-engine.js";

const NONE: PolicyDecision = { action: null, policies: [], reason: "" };
const evaluation = (enforce: PolicyDecision, audit: PolicyDecision = NONE): PolicyEvaluation => ({
  enforce,
  audit,
  errors: [],
});

describe("parsePolicyReason", () => {
  it("reads back an enforced block's reason and the deciding ids the guard wrote", () => {
    const decided = policyAnswer(
      evaluation({
        action: "block",
        policies: ["destructive-shell.rm-recursive-force", "git-safety.force-push"],
        reason: "recursive forced deletion (rm -rf)",
      }),
    );
    expect(parsePolicyReason(decided.decision?.reason ?? "")).toEqual({
      mode: "enforce",
      would: null,
      reason: "recursive forced deletion (rm -rf)",
      policies: ["destructive-shell.rm-recursive-force", "git-safety.force-push"],
    });
  });

  it("reads back an audit-mode note: what would have happened and which policies decided", () => {
    const audited = policyAnswer(
      evaluation(NONE, { action: "deny", policies: ["secrets-read.env-files"], reason: "reads a .env file" }),
    );
    expect(audited.decision).toBeNull();
    expect(parsePolicyReason(audited.auditReason ?? "")).toEqual({
      mode: "audit",
      would: "deny",
      reason: "reads a .env file",
      policies: ["secrets-read.env-files"],
    });
    const tested = policyTestResult(
      evaluation(NONE, { action: "request_permission", policies: ["g.push"], reason: "push" }),
    );
    expect(parsePolicyReason(tested.reason)).toMatchObject({
      would: "request_permission",
      policies: ["g.push"],
    });
  });

  it("notes an enforced ask's deciding policies for the audit, which would otherwise say only ok", () => {
    const asked = policyAnswer(
      evaluation({
        action: "request_permission",
        policies: ["git-safety.push-main"],
        reason: "push to main",
      }),
    );
    expect(asked.decision).toEqual({
      action: "request_permission",
      reason: "push to main (policy git-safety.push-main)",
    });
    expect(parsePolicyReason(asked.auditReason ?? "")).toEqual({
      mode: "enforce",
      would: null,
      reason: "push to main",
      policies: ["git-safety.push-main"],
    });
    // A block is audited with its own reason: no note.
    expect(
      policyAnswer(evaluation({ action: "block", policies: ["a.b"], reason: "no" })).auditReason,
    ).toBeUndefined();
  });

  it("takes the last id list, so a reason that itself says (policy …) keeps its words", () => {
    const text = policyAnswer(
      evaluation({ action: "block", policies: ["a.b"], reason: "see (policy handbook)" }),
    ).decision?.reason;
    expect(parsePolicyReason(text ?? "")).toMatchObject({
      reason: "see (policy handbook)",
      policies: ["a.b"],
    });
  });

  it("drops the id a cut may have shortened and keeps the whole ones", () => {
    expect(parsePolicyReason("too long (policy a.first, b.second, c.thi")).toEqual({
      mode: "enforce",
      would: null,
      reason: "too long",
      policies: ["a.first", "b.second"],
    });
  });

  it("names no policy for a reason that lists none (a handler error, another handler's words)", () => {
    expect(parsePolicyReason("Timeout")).toEqual({
      mode: "enforce",
      would: null,
      reason: "Timeout",
      policies: [],
    });
    expect(parsePolicyReason("x (policy <script>, ok.id)").policies).toEqual(["ok.id"]);
    expect(parsePolicyReason("").policies).toEqual([]);
  });
});
