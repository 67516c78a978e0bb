import { GeodeError } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { compileRubric, defaultRevisionInstruction, runBuiltInVerifier } from "./built-in-verifier.js";

const none = compileRubric();
const run = (over: Partial<Parameters<typeof runBuiltInVerifier>[0]> = {}) =>
  runBuiltInVerifier({
    text: "The answer is 42.",
    termination_reason: "natural",
    mode: "rule_based",
    rubric: none,
    ...over,
  });

describe("built-in rule_based verifier", () => {
  it("passes a non-empty candidate that ended naturally", () => {
    expect(run()).toEqual({
      passed: true,
      mode: "rule_based",
      score: 1,
      rubric_misses: [],
      should_retry: false,
    });
  });

  it("treats a blank candidate as the retryable miss empty_candidate", () => {
    const r = run({ text: "  \n" });
    expect(r).toMatchObject({
      passed: false,
      rubric_misses: ["empty_candidate"],
      should_retry: true,
      score: 0.5,
    });
  });

  it("accepts natural, forced_text and actionable_partial; any other termination is not retryable", () => {
    for (const t of ["natural", "forced_text", "actionable_partial"])
      expect(run({ termination_reason: t }).passed).toBe(true);
    const r = run({ termination_reason: "max_rounds", text: "" });
    expect(r.rubric_misses).toEqual(["empty_candidate", "termination:max_rounds"]);
    expect(r.should_retry).toBe(false);
    expect(r.score).toBe(0);
  });

  it("adds missing:/forbidden: misses for rubric patterns and scores the share of checks passed", () => {
    const rubric = compileRubric({ required: ["\\b42\\b", "answer", "units?"], forbidden: ["TODO", "is"] });
    const r = run({ rubric });
    expect(r.rubric_misses).toEqual(["missing:units?", "forbidden:is"]);
    expect(r.should_retry).toBe(true);
    expect(r.score).toBeCloseTo(5 / 7, 4);
  });

  it("merges PreVerify misses as failed retryable checks", () => {
    const r = run({ additionalMisses: ["cite a source"] });
    expect(r).toMatchObject({ passed: false, rubric_misses: ["cite a source"], should_retry: true });
    expect(r.score).toBeCloseTo(2 / 3, 4);
  });

  it("mode off passes without checks, but PreVerify misses still fail it", () => {
    expect(run({ mode: "off", text: "", termination_reason: "error" })).toMatchObject({
      passed: true,
      score: 1,
    });
    expect(run({ mode: "off", additionalMisses: ["x"] })).toMatchObject({
      passed: false,
      should_retry: true,
    });
  });

  it("refuses an invalid pattern with invalid_request", () => {
    const err = (() => {
      try {
        compileRubric({ required: ["ok"], forbidden: ["(unclosed"] });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(GeodeError);
    expect((err as GeodeError).code).toBe("invalid_request");
    expect((err as GeodeError).message).toContain("rubric.forbidden[0]");
  });

  it("names every miss in the default revision instruction", () => {
    const text = defaultRevisionInstruction(run({ text: "", rubric: compileRubric({ required: ["cite"] }) }));
    expect(text).toContain("must not be empty");
    expect(text).toContain("/cite/");
  });
});
