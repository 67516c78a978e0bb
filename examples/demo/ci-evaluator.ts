/**
 * A CI-style evaluator on PostVerify: asks for one revision until the answer has a `## Summary`
 * section, then accepts. It cannot turn a failed built-in check into a pass (the verifier
 * escalates such an accept), so it only ever adds requirements.
 */
import { type GeodeConnection, HookName, type ServedHook, serveHook } from "@geode/sdk";
import { isMain, runHandlerProcess } from "./run-handler.js";

export function serveCiEvaluator(conn: GeodeConnection): Promise<ServedHook> {
  return serveHook(conn, HookName.PostVerify, { name: "ci-evaluator", priority: 50 }, (envelope) => {
    const summary = String(envelope.payload["candidate_summary"] ?? "");
    if (!summary.includes("## Summary")) {
      return {
        action: "revise",
        reason: "release notes need a summary",
        instruction: "Add a '## Summary' section of one or two sentences at the top of the answer.",
      };
    }
    return { action: "accept", reason: "summary present" };
  });
}

if (isMain(import.meta))
  await runHandlerProcess("ci-evaluator", async (conn) => [await serveCiEvaluator(conn)]);
