import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type ActivityRecorder, startActivityRecorder } from "@geode/activity-recorder";
import { requestJson } from "@geode/bus";
import { HealthReplySchema, HookName, TurnRecordSchema } from "@geode/contracts";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import { createVerifyClient, type VerifyClient } from "@geode/runtime";
import { spawnService, useTestEnv, waitFor } from "@geode/testing";
import { type RunningVerifier, startVerifier } from "@geode/verifier";
import { Kvm } from "@nats-io/kv";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HandlerScope, startDispatcher } from "./hooks-support.js";
import { candidate, readStream, rootTurn, timelineOf } from "./verify-support.js";

const env = useTestEnv();
let dispatcher: HookDispatcher;
let verifiers: RunningVerifier[] = [];
let verify: VerifyClient;
let scope: HandlerScope;

beforeAll(async () => {
  const { nc, names } = env();
  dispatcher = await startDispatcher(env());
  // Two replicas in the queue group, each on its own connection.
  verifiers = [
    await startVerifier({ nc, names }),
    await startVerifier({ nc: await env().connect("verifier-2"), names }),
  ];
  verify = createVerifyClient({ nc, names });
  scope = new HandlerScope(env(), [dispatcher]);
});
afterAll(async () => {
  await scope?.close();
  for (const v of verifiers) await v.stop();
  await dispatcher?.stop();
});

describe("what verification stores", () => {
  it("records the candidate's SHA-256, never its text, in the streams and the Postgres projection", async () => {
    const { nc, names, jsm, ns, databaseUrl } = env();
    const secretText = `The launch code is ${"swordfish-".repeat(3)}${Date.now()} and nobody may read it.`;
    const digest = createHash("sha256").update(secretText, "utf8").digest("hex");
    await scope.serve(HookName.PostVerify, { name: "evidence" }, () => ({
      action: "accept",
      evidence_refs: [{ kind: "sil_eval", schema_id: "eval.v1", authority: "ci", reference: "run-7" }],
    }));
    const corr = rootTurn();
    const accepted = await verify.finalize({ correlation: corr, candidate: candidate(secretText) });
    expect(accepted).toMatchObject({ policy_action: "accept", candidate_sha256: digest });
    expect(accepted.evidence_refs).toEqual([
      { kind: "sil_eval", schema_id: "eval.v1", authority: "ci", reference: "run-7" },
    ]);
    const parked = await verify.finalize({
      correlation: rootTurn(corr.session_id),
      candidate: candidate(secretText, { termination_reason: "error" }),
    });
    expect(parked.pending_text).toBe(secretText);

    const timeline = await timelineOf(jsm, names.timelineStream);
    const decided = timeline.filter(
      (r) => r.kind === "verification.decided" && r.correlation.session_id === corr.session_id,
    );
    expect(decided).toHaveLength(2);
    expect(decided[0]?.payload).toMatchObject({
      candidate_sha256: digest,
      root_turn: corr.turn_id,
      verify_attempt: 0,
      built_in_passed: true,
      policy_action: "accept",
    });
    const evidence = timeline.find(
      (r) => r.kind === "verification.evidence" && r.correlation.turn_id === corr.turn_id,
    );
    expect(evidence?.payload).toMatchObject({
      candidate_sha256: digest,
      evidence_refs: accepted.evidence_refs,
    });

    const raw = [
      ...(await readStream(jsm, names.timelineStream)),
      ...(await readStream(jsm, names.eventsStream)),
    ].map((m) => m.raw);
    expect(raw.some((r) => r.includes(digest))).toBe(true);
    expect(raw.filter((r) => r.includes("swordfish"))).toEqual([]);
    const verifyEvents = raw.filter((r) => r.includes("turn_verify_"));
    expect(verifyEvents.length).toBeGreaterThanOrEqual(2);

    // The projection, fed by the real recorder from the same streams.
    const runsDir = mkdtempSync(path.join(tmpdir(), "geode-verify-runs-"));
    let recorder: ActivityRecorder | undefined;
    const client = new pg.Client({ connectionString: databaseUrl });
    try {
      recorder = await startActivityRecorder({ nc, names, databaseUrl, runsDir });
      await client.connect();
      const timelineCount = (await jsm.streams.info(names.timelineStream)).state.messages;
      await waitFor(async () => {
        const r = await client.query(`select count(*)::int as n from "${ns}".session_events`);
        return (r.rows[0] as { n: number }).n >= timelineCount;
      });
      const rows = await client.query(
        `select payload::text as p from "${ns}".session_events union all select payload::text from "${ns}".activity_events`,
      );
      const texts = rows.rows.map((r: { p: string }) => r.p);
      expect(texts.some((t) => t.includes(digest))).toBe(true);
      expect(texts.filter((t) => t.includes("swordfish"))).toEqual([]);
    } finally {
      await client.end().catch(() => undefined);
      await recorder?.stop();
      rmSync(runsDir, { recursive: true, force: true });
    }
    await scope.close();
  });

  it("two replicas racing on one root turn count each attempt exactly once", async () => {
    const corr = rootTurn();
    const n = 6;
    const replies = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        verify.finalize({
          correlation: corr,
          candidate: candidate(`answer ${i}`, {
            rounds: 1,
            tool_call_count: 1,
            usage: { input_tokens: 10, output_tokens: 1 },
          }),
        }),
      ),
    );
    expect(replies.map((r) => r.verify_attempt).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);
    const kv = await new Kvm(env().nc).open(env().names.buckets.verify);
    const entry = await kv.get(env().names.verifyKey(corr.session_id, corr.turn_id));
    const record = TurnRecordSchema.parse(entry?.json());
    expect(record.attempts.map((a) => a.attempt)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(record.attempts.every((a) => a.state === "decided")).toBe(true);
    // the last writer's totals cover all six attempts
    expect(Math.max(...replies.map((r) => r.totals.rounds))).toBe(n);
  });
});

describe("the verifier as a process", () => {
  it("answers health and serves finalize", async () => {
    const { nc, names } = env();
    const proc = spawnService("services/verifier/src/main.ts", env().env);
    try {
      // health is served once the process has connected and started
      const health = HealthReplySchema.parse(
        await waitFor(
          () => requestJson(nc, names.health("verifier"), {}, { timeoutMs: 1_000 }).catch(() => null),
          20_000,
          100,
        ),
      );
      expect(health).toMatchObject({ service: "verifier", status: "ok" });
      // stop the in-process replicas so the process answers
      for (const v of verifiers.splice(0)) await v.stop();
      const r = await verify.finalize({ correlation: rootTurn(), candidate: candidate("from the process") });
      expect(r.policy_action).toBe("accept");
    } finally {
      expect(await proc.stop()).toBe(0);
    }
  });
});
