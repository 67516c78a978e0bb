import { describe, expect, it } from "vitest";
import { builtIn } from "./built-in.js";
import { useVerifyHarness } from "./verify-fixture.js";

const { h } = useVerifyHarness();

const noPre = { outcome: undefined as never, additionalMisses: [] };

describe("built-in stage", () => {
  it("checks the candidate against the rubric and gives PostVerify and Stop the verify fields", async () => {
    const run = await h().open("rubric", "42 apples", { rubric: { required: ["\\d+ kg"] } });
    const { result, fields } = builtIn(run, noPre);
    expect(result).toMatchObject({ passed: false, rubric_misses: ["missing:\\d+ kg"], should_retry: true });
    expect(fields).toEqual({
      passed: false,
      mode: "rule_based",
      score: result.score,
      rubric_misses: ["missing:\\d+ kg"],
      ...run.facts,
      effective_mode: "rule_based",
      should_retry: true,
    });
  });

  it("PreVerify's misses make even mode off fail, retryably: a hook may only add requirements", async () => {
    const run = await h().open("strict", "fine", { mode: "off" });
    expect(builtIn(run, noPre).result.passed).toBe(true);
    expect(builtIn(run, { ...noPre, additionalMisses: ["cite_sources"] }).result).toMatchObject({
      passed: false,
      rubric_misses: ["cite_sources"],
      should_retry: true,
    });
  });
});
