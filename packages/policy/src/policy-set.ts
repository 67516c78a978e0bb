import * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import { ErrorCode, GeodeError, type PolicyMode, sha256 } from "@geode/contracts";
import { checkPolicyBounds } from "./policy-bounds.js";

/** One policy of a set as the guard decides with it. */
export interface CompiledPolicy {
  /** `{set}.{@id or policyN}`: unique across every loaded set, named in reasons and audits. */
  id: string;
  set: string;
  mode: PolicyMode;
  effect: "permit" | "forbid";
  /** Its `@reason("…")`, else its id. */
  reason: string;
  /** Annotated `@ask`: a match asks a person instead of blocking. */
  ask: boolean;
  /**
   * The policy with effect `permit`, as Cedar text (parsed a little faster than its JSON form), so
   * that one authorization reports every matching policy.
   */
  matcher: string;
}

/** A policy set checked and split into its policies. */
export interface CompiledSet {
  name: string;
  mode: PolicyMode;
  sha256: string;
  policies: CompiledPolicy[];
}

/** 1-based line and column of a character offset of `text`. */
function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split("\n");
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 };
}

/** Cedar's first error as one line with its position, e.g. `3:14: unexpected token`. */
function refusal(name: string, text: string, errors: cedar.DetailedError[]): GeodeError {
  const first = errors[0];
  const at = first?.sourceLocations?.[0];
  const pos = at ? lineColumn(text, at.start) : undefined;
  const label = at?.label ? ` (${at.label})` : "";
  const help = first?.help ? `; ${first.help}` : "";
  const where = pos ? `${pos.line}:${pos.column}: ` : "";
  return new GeodeError(
    ErrorCode.SchemaInvalid,
    `policy set ${name}: ${where}${first?.message ?? "invalid policy set"}${label}${help}`,
    { details: { name, ...(pos ?? {}), errors: errors.length } },
  );
}

/**
 * Checks a policy set's text against the schema: a text past the bounds Cedar can take is refused
 * before Cedar sees it (`checkPolicyBounds`), then Cedar's parse and validation errors are refused
 * (`schema_invalid`) with Cedar's message and the line:column of the first one.
 */
export function validatePolicyText(name: string, text: string, schema: string): void {
  checkPolicyBounds(name, text);
  const answer = cedar.validate({ schema, policies: { staticPolicies: text } });
  if (answer.type === "failure") throw refusal(name, text, answer.errors);
  if (answer.validationErrors.length > 0)
    throw refusal(
      name,
      text,
      answer.validationErrors.map((e) => e.error),
    );
}

function annotation(json: cedar.PolicyJson, key: string): string | null | undefined {
  const all = json.annotations as Record<string, string | null> | undefined;
  return all === undefined || !(key in all) ? undefined : (all[key] ?? null);
}

/** Splits a set into its policies with their ids, reasons and `@ask` (the text was validated). */
export function compilePolicySet(name: string, text: string, mode: PolicyMode): CompiledSet {
  checkPolicyBounds(name, text);
  const parts = cedar.policySetTextToParts(text);
  if (parts.type === "failure") throw refusal(name, text, parts.errors);
  const seen = new Set<string>();
  const policies = parts.policies.map((policyText, i): CompiledPolicy => {
    const parsed = cedar.policyToJson(policyText);
    if (parsed.type === "failure") throw refusal(name, text, parsed.errors);
    const json = parsed.json;
    const id = `${name}.${annotation(json, "id") ?? `policy${i}`}`;
    if (seen.has(id))
      throw new GeodeError(ErrorCode.SchemaInvalid, `policy set ${name}: two policies have the id ${id}`);
    seen.add(id);
    const matcher = cedar.policyToText({ ...json, effect: "permit" });
    if (matcher.type === "failure") throw refusal(name, text, matcher.errors);
    return {
      id,
      set: name,
      mode,
      effect: json.effect,
      reason: annotation(json, "reason") ?? id,
      ask: annotation(json, "ask") !== undefined,
      matcher: matcher.text,
    };
  });
  return { name, mode, sha256: sha256(text), policies };
}

/** Validates against the schema, then compiles: what a write and a load both do. */
export function checkPolicySet(name: string, text: string, mode: PolicyMode, schema: string): CompiledSet {
  validatePolicyText(name, text, schema);
  return compilePolicySet(name, text, mode);
}
