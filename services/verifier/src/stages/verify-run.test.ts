import { describe, expect, it } from "vitest";
import { useVerifyHarness } from "./verify-fixture.js";
import { candidateSummary, releaseAttempt } from "./verify-run.js";

const { h } = useVerifyHarness();

describe("openVerifyRun", () => {
  it("counts the root turn's attempts itself and stamps the correlation with the attempt", async () => {
    const first = await h().open("count");
    const second = await h().open("count", "again", {
      correlation: { session_id: "s", turn_id: "count", verify_attempt: 0 },
    });
    expect([first.attempt, second.attempt]).toEqual([0, 1]);
    expect(second.correlation.verify_attempt).toBe(1);
    expect(first.facts).toEqual({
      termination_reason: "natural",
      rounds: 2,
      tool_call_count: 1,
      candidate_summary: "The answer is 42.",
    });
    expect(first.mode).toBe("rule_based");
  });

  it("refuses bad input before counting anything", async () => {
    await expect(h().open("bad", "x", { rubric: { required: ["("] } })).rejects.toMatchObject({
      code: "invalid_request",
    });
    await expect(h().open("bad", "x", { surprise: 1 })).rejects.toMatchObject({ code: "invalid_request" });
    expect(await h().deps.attempts.get("s", "bad")).toBeNull();
  });

  it("releaseAttempt gives the attempt back, so an outage does not spend the budget", async () => {
    const run = await h().open("outage");
    await releaseAttempt(run);
    expect((await h().open("outage")).attempt).toBe(0);
  });

  it("hooks see at most 280 characters of the candidate, secrets masked", () => {
    expect(candidateSummary("a".repeat(300))).toBe(`${"a".repeat(280)}…[truncated:20]`);
    expect(candidateSummary("key sk-abcdefghijklmnopqrstuvwxyz012345")).not.toContain(
      "sk-abcdefghijklmnopqrstuvwxyz012345",
    );
  });
});
