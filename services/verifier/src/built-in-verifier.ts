import { type BuiltInResult, ErrorCode, GeodeError, type VerifyMode } from "@geode/contracts";

/** Termination reasons after which a candidate may be delivered. */
export const DELIVERABLE_TERMINATIONS: ReadonlySet<string> = new Set([
  "natural",
  "forced_text",
  "actionable_partial",
]);

/** Longest rubric pattern accepted (a bound on the work one request can ask for). */
const MAX_PATTERN_CHARS = 1024;

const EMPTY_CANDIDATE_MISS = "empty_candidate";

/** A rubric whose patterns compiled. */
export interface CompiledRubric {
  required: { pattern: string; regex: RegExp }[];
  forbidden: { pattern: string; regex: RegExp }[];
}

/**
 * Compiles rubric patterns (JavaScript regular expressions, no flags). An invalid or oversized
 * pattern throws GeodeError `invalid_request` naming it, before anything is counted or stored.
 */
export function compileRubric(rubric: { required?: string[]; forbidden?: string[] } = {}): CompiledRubric {
  const compile = (list: string[] | undefined, field: string) =>
    (list ?? []).map((pattern, i) => {
      if (pattern.length > MAX_PATTERN_CHARS)
        throw new GeodeError(
          ErrorCode.InvalidRequest,
          `rubric.${field}[${i}]: pattern longer than ${MAX_PATTERN_CHARS} characters`,
        );
      try {
        return { pattern, regex: new RegExp(pattern) };
      } catch (err) {
        throw new GeodeError(ErrorCode.InvalidRequest, `rubric.${field}[${i}]: invalid regular expression`, {
          cause: err,
          details: { field: `rubric.${field}`, index: i },
        });
      }
    });
  return {
    required: compile(rubric.required, "required"),
    forbidden: compile(rubric.forbidden, "forbidden"),
  };
}

export interface BuiltInInput {
  text: string;
  termination_reason: string;
  mode: VerifyMode;
  rubric: CompiledRubric;
  /** PreVerify `strengthen` misses: extra failed checks, retryable. */
  additionalMisses?: readonly string[];
}

/**
 * The built-in `rule_based` verifier. Checks: the candidate is not empty (blank counts as empty;
 * retryable), the termination reason is deliverable (not retryable: another try ends the same way),
 * each required pattern matches and each forbidden one does not (retryable). PreVerify misses are
 * added as failed checks. `score` is the share of checks passed; `should_retry` is true when the
 * result failed and every miss is retryable. Mode `off` passes with score 1, except that PreVerify
 * misses still fail it (a hook may only add requirements).
 */
export function runBuiltInVerifier(input: BuiltInInput): BuiltInResult {
  const extra = [...(input.additionalMisses ?? [])];
  let checks = extra.length;
  const misses: string[] = [];
  let nonRetryable = false;
  if (input.mode === "rule_based") {
    checks += 2 + input.rubric.required.length + input.rubric.forbidden.length;
    if (input.text.trim() === "") misses.push(EMPTY_CANDIDATE_MISS);
    if (!DELIVERABLE_TERMINATIONS.has(input.termination_reason)) {
      misses.push(`termination:${input.termination_reason}`);
      nonRetryable = true;
    }
    for (const { pattern, regex } of input.rubric.required)
      if (!regex.test(input.text)) misses.push(`missing:${pattern}`);
    for (const { pattern, regex } of input.rubric.forbidden)
      if (regex.test(input.text)) misses.push(`forbidden:${pattern}`);
  }
  for (const miss of extra) if (!misses.includes(miss)) misses.push(miss);
  const failed = misses.length;
  const passed = failed === 0;
  const score = checks === 0 ? 1 : Math.max(0, (checks - Math.min(failed, checks)) / checks);
  return {
    passed,
    mode: input.mode,
    score: Math.round(score * 10_000) / 10_000,
    rubric_misses: misses,
    should_retry: !passed && !nonRetryable,
  };
}

/** Readable requirement for one miss, used in the default revision instruction. */
function describeMiss(miss: string): string {
  if (miss === EMPTY_CANDIDATE_MISS) return "the answer must not be empty";
  if (miss.startsWith("missing:")) return `the answer must match /${miss.slice("missing:".length)}/`;
  if (miss.startsWith("forbidden:")) return `the answer must not match /${miss.slice("forbidden:".length)}/`;
  return `resolve: ${miss}`;
}

/**
 * The runtime's default revision instruction for a retryable failure without a handler's
 * instruction: it names every miss so the next attempt knows what to fix.
 */
export function defaultRevisionInstruction(result: BuiltInResult): string {
  const lines = result.rubric_misses.map((m) => `- ${describeMiss(m)}`);
  return [
    "Your previous answer did not pass verification and was not delivered.",
    "Revise it so that:",
    ...lines,
    "Do not repeat tool calls whose effects already happened.",
  ].join("\n");
}
