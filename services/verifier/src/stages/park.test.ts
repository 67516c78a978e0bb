import { newTurnRecord } from "@geode/state";
import { describe, expect, it } from "vitest";
import { parkTurn, pauseForOwner, pendingEntry } from "./park.js";
import { useVerifyHarness } from "./verify-fixture.js";

const { h } = useVerifyHarness();

describe("park", () => {
  it("keeps the candidate text on the turn (and only there) for its owner", async () => {
    const run = await h().open("p1", "secret draft");
    const parked = parkTurn(newTurnRecord("s", "p1", 1), run, "built_in_fail");
    expect(parked).toMatchObject({
      status: "parked",
      pending: {
        attempt: 0,
        text: "secret draft",
        candidate_sha256: run.candidateSha,
        policy_action: "built_in_fail",
      },
    });
    const entry = pendingEntry(run, "built_in_fail");
    expect(entry).toEqual({
      kind: "verification.pending",
      payload: {
        root_turn: "p1",
        verify_attempt: 0,
        policy_action: "built_in_fail",
        candidate_sha256: run.candidateSha,
        reason: "external_verification_required",
      },
    });
    expect(JSON.stringify(entry)).not.toContain("secret draft");
  });

  it("pauses the session (creating it if absent) but never revives an ended one", async () => {
    const run = await h().open("p2");
    await pauseForOwner(run);
    expect(await h().deps.sessions.get("s")).toMatchObject({
      status: "paused",
      reason: "external_verification_required",
    });
    await h().deps.sessions.mutate("ended", () => ({
      status: "completed",
      reason: "",
      generation: 0,
      model: "",
      provider: "",
      updated_at: 1,
    }));
    await pauseForOwner({ ...run, correlation: { ...run.correlation, session_id: "ended" } });
    expect((await h().deps.sessions.get("ended"))?.status).toBe("completed");
  });
});
