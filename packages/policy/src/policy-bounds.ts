import { ErrorCode, GeodeError, MAX_POLICY_TEXT_CHARS } from "@geode/contracts";

/**
 * How deep a policy's condition may nest, as `checkPolicyBounds` counts it. Cedar (cedar-wasm
 * 4.13) gives way well before the text does: a chain of 61 `||` (or `&&`, `+`, nested `if`)
 * exceeds its JSON recursion limit, and about 120 nested brackets or 1,700 chained `.` overrun the
 * wasm stack (`memory access out of bounds`), after which the whole Cedar instance of the process
 * is unusable. So the text is measured here first and never reaches Cedar past these bounds.
 */
export const MAX_POLICY_DEPTH = 48;

/** Tokens that add a level to a chain: Cedar nests each one inside the previous (left-assoc). */
const CHAIN = new Set(["||", "&&", "+", "-", "*", "if"]);
/** Tokens that end a member chain (`a.b.c`) and add at most one level (the bracket's second unit). */
const RESETS = new Set(["==", "!=", "<", "<=", ">", ">=", "!", "has", "like", "in", "is", "then", "else"]);
const OPEN = new Set(["(", "[", "{"]);
const CLOSE = new Set([")", "]", "}"]);

interface Level {
  /** Chain operators seen at this bracket level since it opened or since its last `,`. */
  chain: number;
  /** `.` accesses of the member chain (`a.b.c(…).d`) being read at this level. */
  dots: number;
}

const depthOf = (levels: Level[]) =>
  levels.reduce((sum, l) => sum + l.chain + l.dots, 0) + 2 * (levels.length - 1);

/** The next token of `text` at `i`: [token, end]; strings, comments and spaces are skipped over. */
function nextToken(text: string, i: number): [string, number] {
  const c = text[i] as string;
  if (c === '"') {
    let j = i + 1;
    while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
    return ['""', j + 1];
  }
  if (/[A-Za-z_]/.test(c)) {
    let j = i + 1;
    while (j < text.length && /[A-Za-z0-9_]/.test(text[j] as string)) j++;
    return [text.slice(i, j), j];
  }
  const two = text.slice(i, i + 2);
  if (["||", "&&", "==", "!=", "<=", ">=", "::"].includes(two)) return [two, i + 2];
  return [c, i + 1];
}

function tooDeep(name: string, text: string, at: number, depth: number): GeodeError {
  const before = text.slice(0, at).split("\n");
  const line = before.length;
  const column = (before.at(-1)?.length ?? 0) + 1;
  return new GeodeError(
    ErrorCode.SchemaInvalid,
    `policy set ${name}: ${line}:${column}: the condition nests deeper than Cedar can evaluate ` +
      `(${depth} levels; at most ${MAX_POLICY_DEPTH}): split it into several policies, or match ` +
      "a set literal with .contains(…) instead of a long chain of || clauses",
    { details: { name, line, column, depth, max_depth: MAX_POLICY_DEPTH } },
  );
}

/**
 * Refuses (`schema_invalid`, `policy set NAME: line:col: …`) a text Cedar cannot take safely:
 * longer than a stored set may be, or nesting deeper than `MAX_POLICY_DEPTH`. The depth counted
 * at a token is, over the brackets around it, each bracket twice (a set or record is a level of
 * Cedar's tree, and one more for the relation inside it) plus the chain operators (`||`, `&&`,
 * `+`, `-`, `*`, `if`) before it at that bracket level and the `.` accesses of the member chain
 * it is in: an upper bound of the
 * depth of Cedar's expression tree there. Runs in one pass, before any Cedar call.
 */
export function checkPolicyBounds(name: string, text: string): void {
  if (text.length > MAX_POLICY_TEXT_CHARS)
    throw new GeodeError(
      ErrorCode.SchemaInvalid,
      `policy set ${name}: 1:1: the text has ${text.length} characters, more than the ${MAX_POLICY_TEXT_CHARS} a set may have`,
      { details: { name, line: 1, column: 1 } },
    );
  let levels: Level[] = [{ chain: 0, dots: 0 }];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (text.startsWith("//", i)) {
      const end = text.indexOf("\n", i);
      i = end === -1 ? text.length : end + 1;
      continue;
    }
    const [token, end] = nextToken(text, i);
    const level = levels.at(-1) as Level;
    if (OPEN.has(token)) levels.push({ chain: 0, dots: 0 });
    else if (CLOSE.has(token)) {
      if (levels.length > 1) levels.pop();
    } else if (token === ";") levels = [{ chain: 0, dots: 0 }];
    else if (token === ",") levels[levels.length - 1] = { chain: 0, dots: 0 };
    else if (token === ".") level.dots++;
    else if (CHAIN.has(token)) {
      level.chain++;
      level.dots = 0;
    } else if (RESETS.has(token)) level.dots = 0;
    const depth = depthOf(levels);
    if (depth > MAX_POLICY_DEPTH) throw tooDeep(name, text, i, depth);
    i = end;
  }
}
