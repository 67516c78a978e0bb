import type { HookDispatcher } from "@geode/hook-dispatcher";
import type { SystemContextMessage } from "@geode/runtime";
import { useTestEnv } from "@geode/testing";
import { type RunningVerifier, startVerifier } from "@geode/verifier";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerWithVerification } from "../examples/evaluator/answer-loop.js";
import { serveUnitsEvaluator } from "../examples/evaluator/evaluator.js";
import { HandlerScope, startDispatcher } from "./hooks-support.js";

const env = useTestEnv();
let dispatcher: HookDispatcher;
let verifier: RunningVerifier;

beforeAll(async () => {
  dispatcher = await startDispatcher(env());
  verifier = await startVerifier({ nc: env().nc, names: env().names });
});
afterAll(async () => {
  await verifier?.stop();
  await dispatcher?.stop();
});

describe("the README's external evaluator", () => {
  it("drives a revise-then-accept loop; the follow-up reaches the runtime as system context", async () => {
    const conn = { nc: env().nc, names: env().names };
    const evaluator = await serveUnitsEvaluator(conn);
    await new HandlerScope(env(), [dispatcher]).known("PostVerify", "units-evaluator");
    const contexts: SystemContextMessage[][] = [];
    const drafts = ["The bridge is 120 long.", "The bridge is 120 m long."];
    try {
      const result = await answerWithVerification(
        conn,
        { session_id: "example", turn_id: "t1" },
        async (ctx) => {
          contexts.push(ctx);
          return drafts.shift() ?? "unreachable";
        },
      );
      expect(result).toEqual({
        delivered: "The bridge is 120 m long.",
        attempts: 2,
        policy_actions: ["revise", "accept"],
      });
      expect(contexts[0]).toEqual([]);
      expect(contexts[1]).toEqual([{ role: "system", content: expect.stringContaining("unit") }]);
    } finally {
      await evaluator.close();
    }
  });
});
