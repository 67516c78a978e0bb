/**
 * An external evaluator: a PostVerify handler that asks for a revision until every number in the
 * answer carries a unit, then accepts with an evidence reference. It can only add requirements:
 * an accept of a candidate that failed the built-in checks is escalated by the verifier.
 */
import { type GeodeConnection, HookName, type ServedHook, serveHook } from "@geode/sdk";

const BARE_NUMBER = /\b\d+(?:\.\d+)?\b(?!\s?(?:m|km|s|ms|kg|%))/;

export function serveUnitsEvaluator(conn: GeodeConnection): Promise<ServedHook> {
  return serveHook(conn, HookName.PostVerify, { name: "units-evaluator", priority: 50 }, ({ payload }) =>
    BARE_NUMBER.test(String(payload["candidate_summary"]))
      ? {
          action: "revise",
          reason: "bare number",
          instruction: "Give every quantity its unit (m, km, s, kg).",
        }
      : {
          action: "accept",
          reason: "units present",
          evidence_refs: [
            { kind: "sil_eval", schema_id: "units.v1", authority: "units-evaluator", reference: "all-units" },
          ],
        },
  );
}
