import { describe, expect, it } from "vitest";
import { preVerify } from "./pre-verify.js";
import { useVerifyHarness } from "./verify-fixture.js";

const { h } = useVerifyHarness();

describe("PreVerify stage", () => {
  it("sends the candidate's facts and mode; collects strengthen misses in chain order", async () => {
    h().script = () => [
      { handler: "a", action: "strengthen", additional_misses: ["cite_sources"] },
      { handler: "b", action: "continue" },
      { handler: "c", action: "strengthen", additional_misses: ["units", "dates"] },
    ];
    const run = await h().open("pre");
    const pre = await preVerify(run);
    expect(pre.additionalMisses).toEqual(["cite_sources", "units", "dates"]);
    expect(h().invoked.at(-1)).toEqual({ hook: "PreVerify", payload: { ...run.facts, mode: "rule_based" } });
  });
});
