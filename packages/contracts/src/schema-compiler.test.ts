import { isDeepStrictEqual } from "node:util";
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CorrelationV2Schema, correlation } from "./correlation.js";
import { hookEnvelope } from "./hook-envelope.js";
import { HookName, SchemaVersion } from "./hook-name.js";
import { EventEnvelopeSchema, TimelineRecordSchema } from "./runtime-event.js";
import { compileSchemaCheck } from "./schema-compiler.js";
import type { Codec } from "./wire-codec.js";
import {
  ApprovalLeg,
  HealthLeg,
  HookHandlerLeg,
  HookInvokeLeg,
  ToolExecuteLeg,
  ToolTerminalLeg,
  VerifyFinalizeLeg,
  VerifyResolveLeg,
  WIRE_LEGS,
} from "./wire-legs.js";

const full = correlation({ session_id: "s", turn_id: "t", tool_call_id: "c", session_generation: 2 });
const json = (text: string): unknown => JSON.parse(text);
const without = (o: object, key: string) => {
  const { [key]: _, ...rest } = o as Record<string, unknown>;
  return rest;
};
/** A copy of `o` with an own, enumerable `__proto__` key, as JSON.parse makes one. */
const withProtoKey = (o: object) =>
  Object.defineProperty({ ...o }, "__proto__", { value: { x: 1 }, enumerable: true, writable: true });

/** True when the schema accepts `body` and returns it unchanged: what the fast path must say. */
function takenAsIs(schema: z.ZodType, body: unknown): boolean {
  const r = schema.safeParse(body);
  return r.success && isDeepStrictEqual(r.data, body);
}

const NOT_JSON = Symbol("not JSON");

/**
 * A body as JSON carries it (a field set to undefined left out, a Date as its string), for ajv,
 * which reads any JavaScript value by its JSON shape; NOT_JSON for one JSON cannot carry, or with
 * an own `__proto__` key, which the fast path leaves to the schema (its copy loses the key).
 */
function asJson(body: unknown): unknown {
  const text = JSON.stringify(body);
  if (text === undefined || /"__proto__":/.test(text)) return NOT_JSON;
  return JSON.parse(text);
}

// ---- the bodies: the clients' own, hand-picked near misses, and generated ones ----------------

const envelope = hookEnvelope(HookName.PreToolUse, full, { tool_name: "shell", arguments: {} });
const outcome = {
  schema_version: SchemaVersion.V2,
  name: HookName.PreToolUse,
  correlation: full,
  payload: { tool_name: "shell", arguments: { cmd: "ls" } },
  decisions: [
    { handler: "guard", action: "continue" },
    { handler: "policy", action: "block", reason: "no shell", instruction: "ask first" },
    { handler: "r", action: "rewrite", updates: { a: 1 } },
    {
      handler: "e",
      action: "continue",
      additional_misses: ["x"],
      evidence_refs: [{ kind: "runtime_event", schema_id: "s", authority: "a", reference: "r" }],
    },
  ],
  decision_sources: ["guard", "policy"],
  handler_errors: ["late: Timeout"],
  blocked: true,
};
const withDecision = (d: Record<string, unknown>) => ({ ...outcome, decisions: [d] });
const toolReply = {
  status: "completed",
  result: { text: "hi" },
  has_error: false,
  executed: true,
  additional_context: ["note"],
  reason: "",
  receipt: { key: "op-1", state: "completed", revision: 3 },
};
const verifyReply = {
  policy_action: "accept",
  deliver: true,
  verify_attempt: 1,
  built_in: { passed: true, mode: "rule_based", score: 1, rubric_misses: [], should_retry: false },
  follow_up_instruction: "none",
  totals: { rounds: 2, tool_call_count: 3, usage: { input_tokens: 10, output_tokens: 5 } },
  candidate_sha256: "ab",
  evidence_refs: [],
};
const event = {
  id: "e-1",
  event: "tool_exec_ended",
  ts: 1_764_590_000_000,
  source: "tool-executor",
  correlation: full,
  payload: { tool_name: "fs.read", duration_ms: 12.5 },
};
const timeline = {
  id: "r-1",
  kind: "tool.completed",
  ts: 1_764_590_000_000,
  source: "tool-executor",
  correlation: full,
  payload: { tool_name: "fs.read" },
  payload_sha256: "0".repeat(64),
};

interface Case {
  what: string;
  schema: z.ZodType;
  /** The leg's codec, when the shape is one leg's message. */
  codec?: Codec<unknown, unknown>;
  /** What the plane's own senders send: each must take the fast path. */
  own: unknown[];
  /** Near misses picked by hand (the generated ones are added to these and to `own`). */
  more?: unknown[];
}

const cases: Case[] = [
  {
    what: "the hook invoke request",
    schema: HookInvokeLeg.request.schema,
    codec: HookInvokeLeg.request,
    own: [
      { correlation: full, payload: { user_input: "hi" }, timeout_ms: 30_000 },
      { correlation: full, payload: {} },
    ],
    more: [
      json(JSON.stringify({ correlation: full, payload: { a: [1, { b: null }] }, timeout_ms: 5 })),
      { correlation: full, payload: {}, timeout_ms: undefined },
      { correlation: full, payload: {}, timeout: 5 },
      { payload: {} },
      { correlation: { session_id: "s" }, payload: {} },
      { correlation: { ...without(full, "run_id"), x: "" }, payload: {} },
      json(`{"correlation":${JSON.stringify(full)},"payload":{"__proto__":{"x":1}}}`),
      { correlation: full, payload: Object.assign(Object.create(null), { a: 1 }) },
      { correlation: full, payload: new Date(0) },
      [full, {}],
    ],
  },
  {
    what: "the dispatch outcome",
    schema: HookInvokeLeg.reply.schema,
    codec: HookInvokeLeg.reply,
    own: [outcome, { ...outcome, decisions: [], decision_sources: [], handler_errors: [], blocked: false }],
    more: [
      { ...outcome, schema_version: SchemaVersion.V1 },
      withDecision({ handler: "h", action: "explode" }),
      withDecision({ action: "continue" }),
      withDecision({ handler: "h", action: "continue", note: "x" }),
      withDecision({ handler: "h", action: "rewrite", updates: [] }),
      json(JSON.stringify(outcome).replace('"handler":"guard"', '"__proto__":{},"handler":"guard"')),
      { ...outcome, correlation: without(full, "step_id") },
      { error: { code: "internal", message: "x" } },
    ],
  },
  {
    what: "the handler envelope",
    schema: HookHandlerLeg.request.schema,
    codec: HookHandlerLeg.request,
    own: [envelope, hookEnvelope(HookName.PreToolUse, full, {}, "v1")],
    more: [
      { ...envelope, schema_version: SchemaVersion.V1 },
      { ...envelope, schema_version: "geode.public-hook.v3" },
      { ...envelope, name: "PreToolUze" },
      { ...envelope, correlation: { ...full, turn_id: 1 } },
    ],
  },
  {
    what: "the handler reply",
    schema: HookHandlerLeg.reply.schema,
    codec: HookHandlerLeg.reply,
    own: [{ decision: null }, { decision: { action: "block", reason: "no" } }],
    more: [
      { decision: [1, "x"] },
      { decision: undefined },
      json('{"decision":null,"__proto__":{}}'),
      [{ decision: null }],
      "null",
    ],
  },
  {
    what: "the tool execute request",
    schema: ToolExecuteLeg.request.schema,
    codec: ToolExecuteLeg.request,
    own: [
      {
        tool_name: "fs.read",
        arguments: { path: "a" },
        correlation: full,
        operation_key: "op",
        timeout_ms: 5,
      },
      { tool_name: "echo", arguments: {}, correlation: full },
    ],
    more: [
      { tool_name: "echo", arguments: {} },
      ...[256, 257].flatMap((n) =>
        ["a", "😀"].map((c) => ({
          tool_name: "x",
          arguments: {},
          correlation: full,
          operation_key: c.repeat(n),
        })),
      ),
      { tool_name: "x", arguments: {}, correlation: full, operation_key: `${"a".repeat(255)}\ud800` },
    ],
  },
  {
    what: "the tool execute reply",
    schema: ToolExecuteLeg.reply.schema,
    codec: ToolExecuteLeg.reply,
    own: [toolReply, { ...toolReply, receipt: null }],
  },
  {
    what: "the tool terminal request",
    schema: ToolTerminalLeg.request.schema,
    codec: ToolTerminalLeg.request,
    own: [{ tool_name: "t", arguments: { a: 1 }, correlation: full }],
  },
  {
    what: "the tool terminal reply",
    schema: ToolTerminalLeg.reply.schema,
    codec: ToolTerminalLeg.reply,
    own: [{ result: { text: "ok" }, has_error: false }],
  },
  {
    what: "the approval request",
    schema: ApprovalLeg.request.schema,
    codec: ApprovalLeg.request,
    own: [
      { approval_id: "ap-1", tool_name: "deploy", safety_level: "mutation", detail: "d", correlation: full },
    ],
  },
  {
    what: "the approval reply",
    schema: ApprovalLeg.reply.schema,
    codec: ApprovalLeg.reply,
    own: [
      { decision: "allow", approver: "ana", reason: "ok" },
      { decision: "deny", approver: "bo" },
    ],
  },
  {
    what: "the verify finalize request",
    schema: VerifyFinalizeLeg.request.schema,
    codec: VerifyFinalizeLeg.request,
    own: [
      {
        correlation: full,
        candidate: {
          text: "done",
          termination_reason: "completed",
          rounds: 2,
          tool_call_count: 3,
          usage: { input_tokens: 1, output_tokens: 2 },
        },
        mode: "rule_based",
        rubric: { required: ["a"], forbidden: [] },
      },
    ],
    more: [
      {
        correlation: full,
        candidate: { text: "", termination_reason: "", rounds: 0, tool_call_count: 0 },
        rubric: {},
      },
    ],
  },
  {
    what: "the verify reply",
    schema: VerifyFinalizeLeg.reply.schema,
    codec: VerifyFinalizeLeg.reply,
    own: [verifyReply],
  },
  {
    what: "the verify resolve request",
    schema: VerifyResolveLeg.request.schema,
    codec: VerifyResolveLeg.request,
    own: [{ correlation: full, action: "revise", instruction: "shorter" }],
  },
  {
    what: "the health request",
    schema: HealthLeg.request.schema,
    codec: HealthLeg.request,
    own: [{}],
    more: [new Date(0), Object.create(null)],
  },
  {
    what: "the health reply",
    schema: HealthLeg.reply.schema,
    codec: HealthLeg.reply,
    own: [
      { service: "verifier", status: "ok", version: "0.1.0", started_at: 1, metrics_url: null },
      {
        service: "verifier",
        status: "degraded",
        version: "0.1.0",
        started_at: 1,
        reason: "db",
        metrics_url: "http://x",
      },
    ],
  },
  {
    what: "a complete correlation",
    schema: CorrelationV2Schema,
    own: [full],
    more: [
      { ...full, session_generation: -0 },
      Object.assign(Object.create(null), full),
      { ...full, constructor: "x" },
    ],
  },
  { what: "the event envelope", schema: EventEnvelopeSchema, own: [event] },
  {
    what: "the timeline record",
    schema: TimelineRecordSchema,
    own: [timeline],
    more: [
      { ...timeline, payload_sha256: "A".repeat(64) },
      { ...timeline, payload_sha256: "0".repeat(63) },
      { ...timeline, payload_sha256: `${"0".repeat(64)}\n` },
    ],
  },
];

/** Values a field can wrongly (or at a bound) hold. */
const ODD_VALUES: unknown[] = [
  null,
  undefined,
  true,
  0,
  -0,
  -1,
  0.5,
  2 ** 53,
  Number.MAX_SAFE_INTEGER,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  "",
  "x",
  "😀",
  "\ud800",
  [],
  [1, "x", null],
  {},
  { a: 1 },
];

/** Every body one step from `body`: each field left out, each value replaced, an unknown field added. */
function nearMisses(body: unknown): unknown[] {
  if (body === null || typeof body !== "object") return [];
  const out: unknown[] = Array.isArray(body)
    ? [[...body, 1], []]
    : [withProtoKey(body), { ...body, extra: 1 }];
  const entries = Object.entries(body);
  for (const [key, value] of entries) {
    const put = (v: unknown) =>
      Array.isArray(body) ? body.map((x, i) => (String(i) === key ? v : x)) : { ...body, [key]: v };
    if (!Array.isArray(body)) out.push(without(body, key));
    for (const v of ODD_VALUES) out.push(put(v));
    for (const inner of nearMisses(value)) out.push(put(inner));
  }
  return out;
}

/** Values that are no body of anything. */
const DEGENERATE: unknown[] = [
  null,
  undefined,
  [],
  "{}",
  42,
  true,
  {},
  new Date(0),
  Object.create(null),
  new Map(),
];

const bodiesOf = (c: Case): unknown[] => [
  ...c.own,
  ...(c.more ?? []),
  ...DEGENERATE,
  ...c.own.flatMap(nearMisses),
  ...(c.more ?? []).flatMap(nearMisses),
  ...c.own.map((b) => json(JSON.stringify(b))),
];

describe.each(cases)("the fast path of $what", (c) => {
  const fast = compileSchemaCheck(c.schema);
  const bodies = bodiesOf(c);

  it("exists, and takes the plane's own bodies as they are", () => {
    expect(fast).not.toBeNull();
    for (const body of c.own) expect(fast!(body), JSON.stringify(body)).toBe(true);
  });

  it("accepts exactly what the schema accepts and returns unchanged, and refuses the rest", () => {
    expect(bodies.length).toBeGreaterThan(10);
    const disagree = bodies.filter((body) => fast!(body) !== takenAsIs(c.schema, body));
    expect(disagree.map((b) => (b === undefined ? "undefined" : JSON.stringify(b)))).toEqual([]);
  });

  it("gives ajv's verdict on the generated JSON Schema for every fixture, as JSON carries it", () => {
    const ajv = new Ajv2020({ strict: true, strictTypes: true });
    const validate = ajv.compile(z.toJSONSchema(c.schema, { io: "output" }));
    const carried = bodies.map(asJson).filter((b) => b !== NOT_JSON);
    expect(carried.length).toBeGreaterThan(bodies.length / 2);
    const disagree = carried.filter((body) => fast!(body) !== validate(body));
    expect(disagree.map((b) => JSON.stringify(b))).toEqual([]);
  });

  it.runIf(c.codec !== undefined)("leaves every decode as the schema decides it", () => {
    for (const body of bodies) {
      const parsed = c.schema.safeParse(body);
      if (parsed.success) expect(c.codec!.decode(body)).toEqual(parsed.data);
      else expect(() => c.codec!.decode(body)).toThrow(/./);
    }
  });
});

describe("compileSchemaCheck", () => {
  it("covers every message of every leg", () => {
    const legCodecs = WIRE_LEGS.flatMap((l) => [l.request.schema, l.reply.schema]);
    expect(legCodecs.every((s) => cases.some((c) => c.schema === s))).toBe(true);
  });

  it("gives no fast path to a schema its JSON Schema cannot say exactly", () => {
    const schemas: z.ZodType[] = [
      z.string().refine((s) => s.length > 2), // a refinement: not in the JSON Schema
      z.strictObject({ a: z.string().regex(/^a$/i) }), // a flag the JSON Schema drops
      z.string().email(), // a format
      z.date(), // nothing JSON can carry
      z.string().transform((s) => s.length),
      z.union([z.object({ a: z.string() }), z.strictObject({ a: z.string(), b: z.string() })]), // the first strips
      z.union([z.strictObject({ a: z.string().default("") }), z.strictObject({ b: z.string() })]),
      z.record(z.enum(["a", "b"]), z.string()), // every key of the enum is required
      z.number().multipleOf(0.1),
      z.tuple([z.string()]),
    ];
    for (const s of schemas)
      expect(compileSchemaCheck(s), JSON.stringify(z.toJSONSchema(s, { unrepresentable: "any" }))).toBeNull();
  });

  it("counts characters as the schema does: a surrogate pair is one", () => {
    const check = compileSchemaCheck(z.string().min(2).max(3))!;
    for (const s of ["ab", "😀😀", "a😀b", "😀😀😀", "abcd", "a", "😀", "\ud800\ud800\ud800\ud800"])
      expect(check(s), s).toBe(z.string().min(2).max(3).safeParse(s).success);
  });
});
