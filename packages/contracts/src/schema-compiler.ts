/**
 * A schema compiler: the JSON Schema zod writes for a schema, compiled with `new Function` into one
 * JavaScript predicate that is true exactly for the bodies the schema returns unchanged. The wire
 * codecs (wire-codec.ts) put it in front of the schema's own pass.
 */
import { z } from "zod";

/** A compiled check of one JSON Schema node. */
type Check = (v: unknown) => boolean;
type JsonNode = Record<string, unknown>;

const NONE: Check = () => false;

/**
 * The fast path of a schema: a predicate, compiled on first use from the JSON Schema zod writes
 * for what the schema returns (`io: "output"`, the form docs/protocol.md shows), that is true
 * exactly for the bodies the schema accepts and returns unchanged: every field present and of its
 * type, with nothing to default or strip. A decoder takes such a body as it is (no schema pass,
 * which costs many times more) and leaves any other to the schema, which fills defaults, strips,
 * or refuses with its issues; so the fast path changes no outcome, only its cost.
 *
 * It holds for the values JSON makes (plain objects and arrays, strings, finite numbers, booleans,
 * null); an object of another prototype, or with an own `__proto__` key (which the schema's copy
 * loses), is left to the schema. A schema its JSON Schema cannot say exactly has no fast path
 * (see `compileSchemaCheck`): the predicate is then false for every body.
 */
export function compiledCheck<T>(schema: z.ZodType<T>): (body: unknown) => body is T {
  let check: Check | undefined;
  return (body): body is T => {
    if (check === undefined) check = compileSchemaCheck(schema) ?? NONE;
    return check(body);
  };
}

/**
 * `schema.safeParse` with the schema's fast path in front: a body the schema would return
 * unchanged is returned as it is, without the schema's pass (see `compiledCheck`).
 */
export function compiledParser<T>(schema: z.ZodType<T>): (body: unknown) => z.ZodSafeParseResult<T> {
  const fast = compiledCheck(schema);
  return (body) => (fast(body) ? { success: true, data: body } : schema.safeParse(body));
}

/**
 * The fast path of a schema, compiled now; null when its JSON Schema cannot say exactly what it
 * checks (a refinement, a transform, a regex with flags, a union of shapes the schema would
 * change, a keyword this compiler does not know), or code cannot be generated here. Its tests
 * (schema-compiler.test.ts) prove each leg's fast path against its schema and against ajv.
 */
export function compileSchemaCheck<T>(schema: z.ZodType<T>): ((body: unknown) => body is T) | null {
  let exact = true;
  let json: JsonNode;
  try {
    json = z.toJSONSchema(schema, {
      io: "output",
      override: ({ zodSchema }) => {
        if (!saysExactly(zodSchema)) exact = false;
      },
    }) as JsonNode;
  } catch {
    return null; // something JSON Schema cannot say at all (a transform, a date)
  }
  return exact ? (compile(json) as ((body: unknown) => body is T) | null) : null;
}

// ---- what the JSON Schema says exactly ----

/** Kinds of zod node whose JSON Schema says all the schema checks. */
const EXACT_TYPES: ReadonlySet<string> = new Set([
  "string",
  "number",
  "boolean",
  "null",
  "object",
  "array",
  "record",
  "enum",
  "literal",
  "union",
  "optional",
  "nullable",
  "default",
  "readonly",
  "unknown",
  "any",
]);
/** Checks that become JSON Schema keywords (a refinement, `custom`, does not). */
const EXACT_CHECKS: ReadonlySet<string> = new Set([
  "min_length",
  "max_length",
  "length_equals",
  "greater_than",
  "less_than",
  "number_format",
  "string_format",
]);

type ZodNode = z.core.$ZodType;

function saysExactly(node: ZodNode): boolean {
  const def = node._zod.def as z.core.$ZodTypeDef & { checks?: z.core.$ZodCheck[] };
  if (!EXACT_TYPES.has(def.type)) return false;
  for (const c of def.checks ?? []) {
    const check = c._zod.def as { check: string; format?: string; pattern?: RegExp };
    if (!EXACT_CHECKS.has(check.check)) return false;
    // JSON Schema keeps a regex's source, not its flags; other string formats become `format`.
    if (check.check === "string_format" && (check.format !== "regex" || check.pattern?.flags !== ""))
      return false;
  }
  // Record keys: any string (an enum of keys makes every key required, which JSON Schema does not say).
  if (def.type === "record" && (def as z.core.$ZodRecordDef).keyType._zod.def.type !== "string") return false;
  // zod takes a union's first option that accepts: an option that would change the body (strip
  // unknown keys, fill a default) could take it before the one that returns it unchanged.
  if (def.type === "union") return (def as z.core.$ZodUnionDef).options.every(changesNothing);
  return true;
}

/** A schema that returns what it accepts unchanged: what it takes in is what it gives out. */
function changesNothing(option: ZodNode): boolean {
  const form = (io: "input" | "output") =>
    JSON.stringify(z.toJSONSchema(option, { io, unrepresentable: "any" }), (k, v) =>
      k === "default" ? undefined : v,
    );
  return form("input") === form("output");
}

// ---- the compiler: JSON Schema → one JavaScript function ----
//
// Generated code, as zod and ajv do it: field names become constant property reads and every
// check is inline, so a body costs what a hand-written check of it would. Names and values from
// the schema enter the source only through JSON.stringify; regexes, sets and branch checks are
// passed in as constants.

const ANNOTATIONS = ["$schema", "title", "description", "default", "examples", "deprecated", "readOnly"];
/** Keywords that assert only on values of one type (compiled with that type only). */
const TYPE_KEYWORDS = [
  "properties",
  "required",
  "additionalProperties",
  "propertyNames",
  "items",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
];
const KNOWN: ReadonlySet<string> = new Set([
  ...ANNOTATIONS,
  ...TYPE_KEYWORDS,
  "type",
  "enum",
  "const",
  "anyOf",
  "oneOf",
  "allOf",
]);

/** Not compiled here: the schema has no fast path. */
class Unsupported extends Error {}

/** Characters as the schema counts them: code points (a surrogate pair is one). */
function codePoints(s: string): number {
  let count = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    if ((s.charCodeAt(i) & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      count--;
      i++;
    }
  }
  return count;
}

const HELPERS = { proto: Object.getPrototypeOf, OP: Object.prototype, hasOwn: Object.hasOwn, codePoints };

/** The source of one check function being written, and the constants it reads. */
class CheckSource {
  readonly lines: string[] = [];
  private readonly consts: unknown[] = [];
  private names = 0;

  /** A constant the code reads (a RegExp, a Set, another check). */
  ref(value: unknown): string {
    this.consts.push(value);
    return `c[${this.consts.length - 1}]`;
  }

  fresh(prefix: string): string {
    return `${prefix}${++this.names}`;
  }

  build(): Check {
    const body = `"use strict";\nconst { proto, OP, hasOwn, codePoints } = h;\nreturn function check(v) {\n${this.lines.join("\n")}\nreturn true;\n};`;
    return new Function("c", "h", body)(this.consts, HELPERS) as Check;
  }
}

/** The check of a whole schema, or null when it holds a keyword (or a form of one) not compiled here. */
function compile(node: unknown): Check | null {
  try {
    return compileNode(node);
  } catch (err) {
    if (err instanceof Unsupported || err instanceof EvalError) return null; // EvalError: no code generation allowed
    throw err;
  }
}

function compileNode(node: unknown): Check {
  const src = new CheckSource();
  emit(src, node, "v");
  return src.build();
}

const literal = (v: unknown) => JSON.stringify(v);
const isPrimitive = (v: unknown) => v === null || ["string", "number", "boolean"].includes(typeof v);

/** Appends statements that `return false` unless `x` (an expression without side effects) meets `node`. */
function emit(src: CheckSource, node: unknown, x: string): void {
  if (node === true) return;
  if (node === false) {
    src.lines.push("return false;");
    return;
  }
  if (node === null || typeof node !== "object" || Array.isArray(node)) throw new Unsupported();
  const n = node as JsonNode;
  if (!Object.keys(n).every((k) => KNOWN.has(k))) throw new Unsupported();
  if (n["type"] !== undefined) emitType(src, n, x);
  else if (TYPE_KEYWORDS.some((k) => k in n)) throw new Unsupported();
  if (n["enum"] !== undefined) {
    if (!Array.isArray(n["enum"]) || !n["enum"].every(isPrimitive)) throw new Unsupported();
    src.lines.push(`if (!${src.ref(new Set(n["enum"]))}.has(${x})) return false;`);
  }
  if ("const" in n) {
    if (!isPrimitive(n["const"])) throw new Unsupported();
    src.lines.push(`if (${x} !== ${literal(n["const"])}) return false;`);
  }
  if (n["allOf"] !== undefined) for (const part of branches(n["allOf"])) emit(src, part, x);
  if (n["anyOf"] !== undefined) {
    const calls = branches(n["anyOf"]).map((b) => `${src.ref(compileNode(b))}(${x})`);
    src.lines.push(`if (!(${calls.join(" || ")})) return false;`);
  }
  if (n["oneOf"] !== undefined) {
    const calls = branches(n["oneOf"]).map((b) => `(${src.ref(compileNode(b))}(${x}) ? 1 : 0)`);
    src.lines.push(`if (${calls.join(" + ")} !== 1) return false;`);
  }
}

function branches(list: unknown): unknown[] {
  if (!Array.isArray(list) || list.length === 0) throw new Unsupported();
  return list;
}

/** `type` with the keywords of the type(s) it names. */
function emitType(src: CheckSource, n: JsonNode, x: string): void {
  const types = Array.isArray(n["type"]) ? (n["type"] as unknown[]) : [n["type"]];
  const [first, second] = types;
  if (types.length === 1) {
    emitOne(src, first, n, x);
    return;
  }
  // `[T, "null"]`, a nullable field: null, or T with its keywords.
  if (types.length === 2 && second === "null" && first !== "null") {
    src.lines.push(`if (${x} !== null) {`);
    emitOne(src, first, n, x);
    src.lines.push("}");
    return;
  }
  const calls = types.map((t) => {
    const one = new CheckSource();
    emitOne(one, t, n, "v");
    return `${src.ref(one.build())}(${x})`;
  });
  src.lines.push(`if (!(${calls.join(" || ")})) return false;`);
}

const num = (n: JsonNode, key: string): number | undefined => {
  const v = n[key];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) throw new Unsupported();
  return v;
};

function emitOne(src: CheckSource, type: unknown, n: JsonNode, x: string): void {
  const out = src.lines;
  switch (type) {
    case "string":
      emitString(src, n, x);
      return;
    case "integer":
    case "number": {
      out.push(
        `if (typeof ${x} !== "number" || !Number.${type === "integer" ? "isInteger" : "isFinite"}(${x})) return false;`,
      );
      const bounds: Array<[string, string]> = [
        ["minimum", "<"],
        ["maximum", ">"],
        ["exclusiveMinimum", "<="],
        ["exclusiveMaximum", ">="],
      ];
      for (const [key, op] of bounds) {
        const bound = num(n, key);
        if (bound !== undefined) out.push(`if (${x} ${op} ${literal(bound)}) return false;`);
      }
      return;
    }
    case "boolean":
      out.push(`if (typeof ${x} !== "boolean") return false;`);
      return;
    case "null":
      out.push(`if (${x} !== null) return false;`);
      return;
    case "array":
      emitArray(src, n, x);
      return;
    case "object":
      emitObject(src, n, x);
      return;
    default:
      throw new Unsupported();
  }
}

function emitString(src: CheckSource, n: JsonNode, x: string): void {
  const out = src.lines;
  out.push(`if (typeof ${x} !== "string") return false;`);
  const min = num(n, "minLength");
  const max = num(n, "maxLength");
  // n UTF-16 units hold between n/2 and n code points: count them only where that decides.
  if (min !== undefined && min > 0)
    out.push(
      `if (${x}.length < ${min} || (${x}.length < ${2 * min} && codePoints(${x}) < ${min})) return false;`,
    );
  if (max !== undefined) out.push(`if (${x}.length > ${max} && codePoints(${x}) > ${max}) return false;`);
  if (n["pattern"] !== undefined) {
    if (typeof n["pattern"] !== "string") throw new Unsupported();
    // As the schema runs it: the regex's own source, no flags (flagged ones have no fast path).
    out.push(`if (!${src.ref(new RegExp(n["pattern"]))}.test(${x})) return false;`);
  }
}

function emitArray(src: CheckSource, n: JsonNode, x: string): void {
  const min = num(n, "minItems");
  const max = num(n, "maxItems");
  const size = [min ? ` || ${x}.length < ${min}` : "", max !== undefined ? ` || ${x}.length > ${max}` : ""];
  src.lines.push(`if (!Array.isArray(${x})${size.join("")}) return false;`);
  if (n["items"] === undefined) return;
  const i = src.fresh("i");
  const item = src.fresh("x");
  src.lines.push(`for (let ${i} = 0; ${i} < ${x}.length; ${i}++) {`, `const ${item} = ${x}[${i}];`);
  emit(src, n["items"], item);
  src.lines.push("}");
}

/**
 * An object as JSON makes it (Object's prototype, no own `__proto__` key, which the schema's copy
 * would not keep), each field of its schema, and no other key unless the schema allows it.
 */
function emitObject(src: CheckSource, n: JsonNode, x: string): void {
  const out = src.lines;
  out.push(
    `if (typeof ${x} !== "object" || ${x} === null || proto(${x}) !== OP || hasOwn(${x}, "__proto__")) return false;`,
  );
  const properties = (n["properties"] ?? {}) as JsonNode;
  const required = new Set((n["required"] ?? []) as string[]);
  const keys = [...new Set([...Object.keys(properties), ...required])];
  if (keys.includes("__proto__")) throw new Unsupported();
  const extra = n["additionalProperties"];
  if (n["propertyNames"] !== undefined && !isAnyString(n["propertyNames"])) throw new Unsupported();
  const anyExtra = extra === undefined || extra === true || isEmpty(extra);
  const count = anyExtra ? "" : src.fresh("n");
  if (count) out.push(`let ${count} = 0;`);
  for (const key of keys) {
    const k = literal(key);
    const y = src.fresh("x");
    // A name Object.prototype has (`constructor`) is read only when it is the object's own.
    out.push(
      `const ${y} = ${key in Object.prototype ? `hasOwn(${x}, ${k}) ? ${x}[${k}] : undefined` : `${x}[${k}]`};`,
    );
    out.push(`if (${y} === undefined) {`);
    // A required field that may hold anything must at least be there (an own key, even undefined).
    const anything = isEmpty(properties[key]) || !(key in properties);
    if (required.has(key)) out.push(anything ? `if (!hasOwn(${x}, ${k})) return false;` : "return false;");
    out.push("} else {", count ? `${count}++;` : "");
    emit(src, properties[key] ?? true, y);
    out.push("}");
  }
  if (anyExtra) return;
  // Every key one of the fields: the common case is told by a count, the rest by a loop.
  const key = src.fresh("k");
  out.push(`if (Object.keys(${x}).length !== ${count}) for (const ${key} in ${x}) {`);
  if (keys.length > 0)
    out.push(`switch (${key}) {`, ...keys.map((k) => `case ${literal(k)}:`), "continue;", "}");
  const value = src.fresh("x");
  out.push(`const ${value} = ${x}[${key}];`);
  emit(src, extra, value);
  out.push("}");
}

/** A node that asserts nothing (annotations only). */
function isEmpty(node: unknown): boolean {
  return (
    node !== null &&
    typeof node === "object" &&
    !Array.isArray(node) &&
    Object.keys(node).every((k) => ANNOTATIONS.includes(k))
  );
}

/** `propertyNames: {type: "string"}`: true of every key of an object. */
function isAnyString(node: unknown): boolean {
  if (node === null || typeof node !== "object") return false;
  return Object.entries(node).every(([k, v]) => (k === "type" ? v === "string" : ANNOTATIONS.includes(k)));
}
