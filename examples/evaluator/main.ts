/**
 * `tsx examples/evaluator/main.ts` against a running deployment (hook-dispatcher and verifier):
 * serves the units evaluator and drives one root turn through revise → accept.
 */
import { connectGeode } from "@geode/runtime";
import { answerWithVerification } from "./answer-loop.js";
import { serveUnitsEvaluator } from "./evaluator.js";

const conn = await connectGeode({ name: "evaluator-example" });
const evaluator = await serveUnitsEvaluator(conn);
// Give the dispatcher a moment to see the new registration.
await new Promise((r) => setTimeout(r, 500));
const drafts = ["The bridge is 120 long.", "The bridge is 120 m long."];
const result = await answerWithVerification(
  conn,
  { session_id: `example-${Date.now()}`, turn_id: "turn-1" },
  async () => drafts.shift() ?? "The bridge is 120 m long.",
);
console.log(JSON.stringify(result));
await evaluator.close();
await conn.close();
