import * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import { GeodeError } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { checkPolicyBounds, MAX_POLICY_DEPTH } from "./policy-bounds.js";
import { packNames, packText, schemaText } from "./policy-files.js";
import { checkPolicySet } from "./policy-set.js";

const when = (cond: string) => `forbid (principal, action, resource) when { ${cond} };`;
const clause = (i: number) => `context.hook == "h${i}"`;
const chain = (op: string) => (n: number) =>
  when(Array.from({ length: n }, (_, i) => clause(i)).join(` ${op} `));

/**
 * The shapes that made Cedar give way (cedar-wasm 4.13): a long chain of one operator
 * (`recursion limit exceeded` past 60), deep brackets (`memory access out of bounds`, which breaks
 * the wasm instance for the whole process), long member chains, nested `if`.
 */
const SHAPES: Record<string, (n: number) => string> = {
  or: chain("||"),
  and: chain("&&"),
  plus: (n) => when(`${Array.from({ length: n }, (_, i) => `${i}`).join(" + ")} == 5`),
  parens: (n) => when(`${"(".repeat(n)}${clause(0)}${")".repeat(n)}`),
  sets: (n) => when(`${"[".repeat(n)}1${"]".repeat(n)} == [1]`),
  records: (n) => when(`${"{a: ".repeat(n)}1${"}".repeat(n)} == {a: 1}`),
  members: (n) => when(`context${".a".repeat(n)} == 1`),
  ifs: (n) => when(`${"if true then ".repeat(n)}true${" else false".repeat(n)}`),
  "or in sets": (n) => when(`${"[".repeat(n)}${chain("||")(n).slice(40, -3)}${"]".repeat(n)} == [true]`),
};

/** The set's refusal message, or "" when Cedar took it. */
function outcome(text: string): string {
  try {
    checkPolicySet("deep", text, "enforce", schemaText());
    return "";
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** The largest n the bounds let through for a shape. */
function largestAllowed(shape: (n: number) => string): number {
  let n = 1;
  for (;;) {
    try {
      checkPolicyBounds("deep", shape(n + 1));
    } catch {
      return n;
    }
    n++;
  }
}

describe("the bounds a policy text is measured against before Cedar sees it", () => {
  it("refuse hundreds of clauses, deep brackets and long member chains with line:col, and Cedar still works", () => {
    for (const [shape, make] of Object.entries(SHAPES))
      for (const n of [200, 2_000]) {
        const message = outcome(make(n));
        expect({ shape, n, message }).toEqual({
          shape,
          n,
          message: expect.stringMatching(
            new RegExp(
              `^policy set deep: 1:\\d+: the condition nests deeper than Cedar can evaluate .*at most ${MAX_POLICY_DEPTH}`,
            ),
          ),
        });
      }
    // Nothing reached Cedar's wasm: it still parses and decides.
    expect(cedar.checkParsePolicySet({ staticPolicies: "permit (principal, action, resource);" }).type).toBe(
      "success",
    );
  });

  it("let through only what Cedar takes: at each shape's largest allowed size Cedar answers normally", () => {
    for (const [shape, make] of Object.entries(SHAPES)) {
      const n = largestAllowed(make);
      const message = outcome(make(n));
      expect({ shape, n, message }).not.toEqual({
        shape,
        n,
        message: expect.stringMatching(/recursion|out of bounds|call stack|unreachable/),
      });
      expect(n).toBeGreaterThan(shape === "or in sets" ? 10 : 20);
    }
    expect(cedar.checkParsePolicySet({ staticPolicies: "permit (principal, action, resource);" }).type).toBe(
      "success",
    );
  });

  it("count only code: strings, comments and long sets of values are no depth", () => {
    const text = `// ${"((((".repeat(100)}
@reason("${"(".repeat(500)}")
${when(`[${Array.from({ length: 500 }, (_, i) => `"c${i}"`).join(", ")}].contains(context.hook) || context.hook like "*${"[".repeat(200)}*"`)}`;
    expect(outcome(text)).toBe("");
    for (const name of packNames()) expect(() => checkPolicyBounds(name, packText(name) ?? "")).not.toThrow();
  });

  it("refuse a text longer than a stored set may be, with the refused form", () => {
    const text = `${when(clause(0))}\n// ${"x".repeat(300 * 1024)}`;
    expect(() => checkPolicyBounds("big", text)).toThrow(GeodeError);
    expect(outcome(text).replace("deep", "big")).toMatch(/^policy set big: 1:1: the text has \d+ characters/);
  });
});
