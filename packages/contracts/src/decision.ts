import { DECISION_FIELDS, type HookDecision } from "./hook-envelope.js";
import { ALLOWED_ACTIONS, type HookName } from "./hook-name.js";
import { EvidenceRefSchema } from "./hook-payloads.js";
import { sanitizeJson, sanitizeText } from "./sanitize.js";

/** Decision limits: fields are cut to these, not refused. */
export const DECISION_LIMITS = {
  reasonChars: 1024,
  instructionChars: 4096,
  additionalMisses: 32,
  missChars: 128,
  evidenceRefs: 32,
  evidenceFieldChars: 512,
} as const;

export type DecisionCheck = { ok: true; decision: HookDecision | null } | { ok: false; error: string };

const fail = (error: string): DecisionCheck => ({ ok: false, error });

/**
 * Validates one handler decision for `hook` against every rule of docs/hooks.md#decision, after cutting
 * the bounded fields. `null`/`undefined` is "no decision". The error strings are the contract's
 * exact messages.
 */
export function validateDecision(hook: HookName, raw: unknown): DecisionCheck {
  if (raw === null || raw === undefined) return { ok: true, decision: null };
  if (typeof raw !== "object" || Array.isArray(raw)) return fail("decision must be an object or null");
  const input = raw as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (!(DECISION_FIELDS as readonly string[]).includes(key))
      return fail(`decision field ${key} is not allowed`);
  }
  const action = input["action"];
  if (typeof action !== "string" || action === "") return fail("decision requires an action");
  if (!(ALLOWED_ACTIONS[hook] as readonly string[]).includes(action))
    return fail(`${action} is not allowed for ${hook}`);

  const decision: Record<string, unknown> = { action };
  if (input["reason"] !== undefined) {
    if (typeof input["reason"] !== "string") return fail("decision reason must be a string");
    decision["reason"] = sanitizeText(input["reason"], DECISION_LIMITS.reasonChars);
  }
  if (input["instruction"] !== undefined) {
    if (typeof input["instruction"] !== "string") return fail("decision instruction must be a string");
    decision["instruction"] = sanitizeText(input["instruction"], DECISION_LIMITS.instructionChars);
  }
  if (input["updates"] !== undefined) {
    const u = input["updates"];
    if (u === null || typeof u !== "object" || Array.isArray(u))
      return fail("decision updates must be an object");
    decision["updates"] = sanitizeJson(u);
  }
  if (input["additional_misses"] !== undefined) {
    const m = input["additional_misses"];
    if (!Array.isArray(m) || m.some((x) => typeof x !== "string"))
      return fail("decision additional_misses must be an array of strings");
    decision["additional_misses"] = (m as string[])
      .slice(0, DECISION_LIMITS.additionalMisses)
      .map((x) => sanitizeText(x, DECISION_LIMITS.missChars));
  }
  if (input["evidence_refs"] !== undefined) {
    const refs = input["evidence_refs"];
    if (!Array.isArray(refs)) return fail("decision evidence_refs must be an array");
    const cut = refs.slice(0, DECISION_LIMITS.evidenceRefs).map((r) => {
      if (r === null || typeof r !== "object" || Array.isArray(r)) return r;
      const o: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(r as Record<string, unknown>)) {
        o[k] = typeof v === "string" ? sanitizeText(v, DECISION_LIMITS.evidenceFieldChars) : v;
      }
      return o;
    });
    for (const ref of cut) {
      if (!EvidenceRefSchema.safeParse(ref).success)
        return fail("decision evidence_refs has an invalid reference");
    }
    decision["evidence_refs"] = cut;
  }

  const updates = decision["updates"] as Record<string, unknown> | undefined;
  const instruction = decision["instruction"] as string | undefined;
  const misses = decision["additional_misses"] as string[] | undefined;
  if (action === "rewrite" && (!updates || Object.keys(updates).length === 0))
    return fail("rewrite requires non-empty updates");
  if (action !== "rewrite" && updates !== undefined)
    return fail("updates are only allowed for rewrite decisions");
  if (hook === "PostVerify" && action === "revise" && !instruction)
    return fail("PostVerify revise requires an instruction");
  if (hook === "Stop" && action === "continue" && !instruction)
    return fail("Stop continue requires an instruction");
  if (hook === "PreVerify" && action === "strengthen" && (!misses || misses.length === 0)) {
    return fail("PreVerify strengthen requires additional_misses");
  }
  return { ok: true, decision: decision as HookDecision };
}

/** Actions that stop the handler chain. */
export function isStoppingAction(action: string): boolean {
  return action === "block" || action === "deny";
}

/** The action a `failure_mode: closed` error turns into for a hook. */
export function closedFailureAction(hook: HookName): "block" | "deny" {
  return hook === "PermissionRequest" ? "deny" : "block";
}
