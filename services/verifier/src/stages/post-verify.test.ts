import { describe, expect, it } from "vitest";
import { builtIn } from "./built-in.js";
import { postVerify } from "./post-verify.js";
import { useVerifyHarness } from "./verify-fixture.js";

const { h } = useVerifyHarness();

const noPre = { outcome: undefined as never, additionalMisses: [] };
const checkedRun = async (turn: string, text = "fine") => {
  const run = await h().open(turn, text);
  return { run, checked: builtIn(run, noPre) };
};

describe("PostVerify stage", () => {
  it("sends the verify fields; without a decision the runtime's default decides (recorded as such)", async () => {
    h().script = () => [];
    const { run, checked } = await checkedRun("default");
    const post = await postVerify(run, checked);
    expect(h().invoked.at(-1)).toEqual({ hook: "PostVerify", payload: checked.fields });
    expect(post.policy).toMatchObject({ action: "accept", fallback: { handler: "runtime_default" } });
  });

  it("a failed guard (blocked outcome) escalates", async () => {
    h().script = () => ({ decisions: [], blocked: true });
    const { run, checked } = await checkedRun("guard");
    expect((await postVerify(run, checked)).policy.action).toBe("escalate");
  });

  it("the budget: a revise decided at attempt 2 becomes escalate_budget_exhausted", async () => {
    h().script = () => [{ handler: "critic", action: "revise", instruction: "shorter" }];
    const actions: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { run, checked } = await checkedRun("budget");
      actions.push((await postVerify(run, checked)).policy.action);
    }
    expect(actions).toEqual(["revise", "revise", "escalate_budget_exhausted"]);
  });
});
