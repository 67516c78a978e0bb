import type { EvidenceRef } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { builtIn } from "./built-in.js";
import { stop } from "./stop.js";
import { outcomeOf, useVerifyHarness } from "./verify-fixture.js";

const { h } = useVerifyHarness();

const ref = (reference: string): EvidenceRef => ({
  kind: "sil_eval",
  schema_id: "s",
  authority: "a",
  reference,
});

async function stopAfter(turn: string, action: "accept" | "escalate") {
  const run = await h().open(turn);
  const pre = {
    outcome: outcomeOf("PreVerify", {}, [{ handler: "p", action: "continue", evidence_refs: [ref("pre")] }]),
    additionalMisses: [],
  };
  const checked = builtIn(run, pre);
  const post = {
    outcome: outcomeOf("PostVerify", {}, [{ handler: "q", action, evidence_refs: [ref("post")] }]),
    policy: { action },
  };
  return stop(run, pre, checked, post);
}

describe("Stop stage", () => {
  it("sees the policy action and the evidence so far; finalize keeps the decision", async () => {
    h().script = () => [{ handler: "closer", action: "finalize", evidence_refs: [ref("stop")] }];
    const stopped = await stopAfter("keep", "accept");
    expect(h().invoked.at(-1)?.payload).toMatchObject({
      policy_action: "accept",
      evidence_refs: [ref("pre"), ref("post")],
    });
    expect(stopped.result.action).toBe("accept");
    expect(stopped.evidence).toEqual([ref("pre"), ref("post"), ref("stop")]);
  });

  it("continue with an instruction turns an accept into continue; after an escalation it is ignored", async () => {
    h().script = () => [{ handler: "more", action: "continue", instruction: "check the sources" }];
    expect((await stopAfter("go-on", "accept")).result).toEqual({
      action: "continue",
      instruction: "check the sources",
    });
    const escalated = await stopAfter("gate", "escalate");
    expect(escalated.result.action).toBe("escalate");
    expect(escalated.ignored).toMatchObject([{ handler: "more", action: "continue" }]);
  });
});
