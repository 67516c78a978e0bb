import { describe, expect, it } from "vitest";
import { correlation } from "./correlation.js";
import {
  DispatchOutcomeSchema,
  HandlerReplySchema,
  HookEnvelopeSchema,
  HookInvokeRequestSchema,
  hookEnvelope,
  quickDispatchOutcome,
  quickHandlerReply,
  quickHookEnvelope,
  quickInvokeRequest,
} from "./hook-envelope.js";
import { HookName, SchemaVersion } from "./hook-name.js";
import { HookHandlerLeg, HookInvokeLeg } from "./wire-legs.js";

const full = correlation({ session_id: "s", turn_id: "t", tool_call_id: "c", session_generation: 2 });
const json = (text: string): unknown => JSON.parse(text);
const without = (o: Record<string, unknown>, key: string) => {
  const { [key]: _, ...rest } = o;
  return rest;
};

/** Bodies as they come off the wire: the clients' own, and each way of being almost right. */
const invokeBodies: Array<[string, unknown]> = [
  ["the hook client's request", { correlation: full, payload: { user_input: "hi" }, timeout_ms: 30_000 }],
  ["no timeout", { correlation: full, payload: { user_input: "hi" } }],
  [
    "from JSON text",
    json(JSON.stringify({ correlation: full, payload: { a: [1, { b: null }] }, timeout_ms: 5 })),
  ],
  ["empty payload", { correlation: full, payload: {} }],
  ["timeout 0", { correlation: full, payload: {}, timeout_ms: 0 }],
  ["timeout negative", { correlation: full, payload: {}, timeout_ms: -1 }],
  ["timeout fractional", { correlation: full, payload: {}, timeout_ms: 1.5 }],
  ["timeout as a string", { correlation: full, payload: {}, timeout_ms: "5" }],
  ["timeout beyond a safe integer", { correlation: full, payload: {}, timeout_ms: 2 ** 53 }],
  ["timeout undefined", { correlation: full, payload: {}, timeout_ms: undefined }],
  ["timeout null", { correlation: full, payload: {}, timeout_ms: null }],
  ["an unknown field", { correlation: full, payload: {}, extra: 1 }],
  ["an unknown field instead of the timeout", { correlation: full, payload: {}, timeout: 5 }],
  ["no correlation", { payload: {} }],
  ["a partial correlation", { correlation: { session_id: "s" }, payload: {} }],
  [
    "a correlation with an unknown field",
    { correlation: { ...without(full, "run_id"), x: "" }, payload: {} },
  ],
  ["a negative generation", { correlation: { ...full, session_generation: -1 }, payload: {} }],
  ["a fractional attempt", { correlation: { ...full, verify_attempt: 0.5 }, payload: {} }],
  ["a numeric session id", { correlation: { ...full, session_id: 7 }, payload: {} }],
  ["a null correlation", { correlation: null, payload: {} }],
  ["an array correlation", { correlation: [], payload: {} }],
  ["no payload", { correlation: full }],
  ["an array payload", { correlation: full, payload: [] }],
  ["a null payload", { correlation: full, payload: null }],
  ["a string payload", { correlation: full, payload: "x" }],
  [
    "a payload with a __proto__ key",
    json(`{"correlation":${JSON.stringify(full)},"payload":{"__proto__":{"x":1}}}`),
  ],
  [
    "a payload without a prototype",
    { correlation: full, payload: Object.assign(Object.create(null), { a: 1 }) },
  ],
  ["a payload of a class", { correlation: full, payload: new Date(0) }],
  ["an array body", [full, {}]],
  ["a null body", null],
  ["a string body", "{}"],
];

const envelope = hookEnvelope(HookName.PreToolUse, full, { tool_name: "shell", arguments: {} });
const envelopeBodies: Array<[string, unknown]> = [
  ["the dispatcher's v2 envelope", envelope],
  ["from JSON text", json(JSON.stringify(envelope))],
  ["a v1 envelope", hookEnvelope(HookName.PreToolUse, full, {}, "v1")],
  ["v1 label with a v2 correlation", { ...envelope, schema_version: SchemaVersion.V1 }],
  ["an unknown version", { ...envelope, schema_version: "geode.public-hook.v3" }],
  ["an unknown hook", { ...envelope, name: "PreToolUze" }],
  ["an unknown field", { ...envelope, extra: true }],
  ["no payload", without(envelope as unknown as Record<string, unknown>, "payload")],
  ["an array payload", { ...envelope, payload: [] }],
  ["a partial correlation", { ...envelope, correlation: { session_id: "s" } }],
  ["a correlation with a wrong type", { ...envelope, correlation: { ...full, turn_id: 1 } }],
  ["a null body", null],
];

const outcome = {
  schema_version: SchemaVersion.V2,
  name: HookName.PreToolUse,
  correlation: full,
  payload: { tool_name: "shell", arguments: { cmd: "ls" } },
  decisions: [
    { handler: "guard", action: "continue" },
    { handler: "policy", action: "block", reason: "no shell", instruction: "ask first" },
  ],
  decision_sources: ["guard", "policy"],
  handler_errors: ["late: Timeout"],
  blocked: true,
};
const withDecision = (d: Record<string, unknown>) => ({ ...outcome, decisions: [d] });
const outcomeBodies: Array<[string, unknown]> = [
  ["the dispatcher's outcome", outcome],
  ["from JSON text", json(JSON.stringify(outcome))],
  ["no decisions", { ...outcome, decisions: [], decision_sources: [], handler_errors: [], blocked: false }],
  ["a v1 label", { ...outcome, schema_version: SchemaVersion.V1 }],
  ["a rewrite with updates", withDecision({ handler: "r", action: "rewrite", updates: { a: 1 } })],
  ["evidence refs", withDecision({ handler: "e", action: "continue", evidence_refs: [] })],
  ["additional misses", withDecision({ handler: "e", action: "continue", additional_misses: ["x"] })],
  ["an unknown action", withDecision({ handler: "h", action: "explode" })],
  ["a decision without its handler", withDecision({ action: "continue" })],
  ["a numeric handler", withDecision({ handler: 1, action: "continue" })],
  ["a numeric reason", withDecision({ handler: "h", action: "block", reason: 1 })],
  ["an unknown decision field", withDecision({ handler: "h", action: "continue", note: "x" })],
  ["a null decision", { ...outcome, decisions: [null] }],
  [
    "a decision with a __proto__ key",
    json(JSON.stringify(outcome).replace('"handler":"guard"', '"__proto__":{},"handler":"guard"')),
  ],
  ["decisions not an array", { ...outcome, decisions: {} }],
  ["a numeric decision source", { ...outcome, decision_sources: [1] }],
  ["handler errors not an array", { ...outcome, handler_errors: "x" }],
  ["blocked as a string", { ...outcome, blocked: "true" }],
  ["no blocked", without(outcome, "blocked")],
  ["an unknown field", { ...outcome, extra: 1 }],
  ["an unknown hook", { ...outcome, name: "PreToolUze" }],
  ["an unknown version", { ...outcome, schema_version: "geode.public-hook.v3" }],
  ["a partial correlation", { ...outcome, correlation: { session_id: "s" } }],
  ["a v1 correlation", { ...outcome, correlation: without(full, "step_id") }],
  ["an array payload", { ...outcome, payload: [] }],
  ["an error reply", { error: { code: "internal", message: "x" } }],
  ["a null body", null],
];

const replyBodies: Array<[string, unknown]> = [
  ["no decision", { decision: null }],
  ["a decision", { decision: { action: "block", reason: "no" } }],
  ["from JSON text", json('{"decision":{"action":"continue"}}')],
  ["a decision of any shape (checked by the hook's rules next)", { decision: [1, "x"] }],
  ["an unknown field", { decision: null, extra: 1 }],
  ["no decision field", {}],
  ["a __proto__ key", json('{"decision":null,"__proto__":{}}')],
  ["an array body", [{ decision: null }]],
  ["a string body", "null"],
  ["a null body", null],
];

/** Each quick check with its schema, its leg's codec, its bodies and the ones it takes. */
const checks = [
  {
    what: "the invoke request",
    quick: quickInvokeRequest,
    schema: HookInvokeRequestSchema,
    decode: HookInvokeLeg.request.decode,
    bodies: invokeBodies,
    taken: [
      "the hook client's request",
      "no timeout",
      "from JSON text",
      "empty payload",
      "a payload without a prototype",
    ],
  },
  {
    what: "the handler envelope",
    quick: quickHookEnvelope,
    schema: HookEnvelopeSchema,
    decode: HookHandlerLeg.request.decode,
    bodies: envelopeBodies,
    taken: ["the dispatcher's v2 envelope", "from JSON text", "v1 label with a v2 correlation"],
  },
  {
    what: "the dispatch outcome",
    quick: quickDispatchOutcome,
    schema: DispatchOutcomeSchema,
    decode: HookInvokeLeg.reply.decode,
    bodies: outcomeBodies,
    taken: ["the dispatcher's outcome", "from JSON text", "no decisions", "a v1 label"],
  },
  {
    what: "the handler reply",
    quick: quickHandlerReply,
    schema: HandlerReplySchema,
    decode: HookHandlerLeg.reply.decode,
    bodies: replyBodies,
    taken: [
      "no decision",
      "a decision",
      "from JSON text",
      "a decision of any shape (checked by the hook's rules next)",
    ],
  },
];

describe.each(checks)("the quick check of $what", ({ quick, schema, decode, bodies, taken }) => {
  it("takes only what the schema accepts, and returns what the schema returns", () => {
    for (const [label, body] of bodies) {
      const result = quick(body);
      if (result === undefined) continue;
      const parsed = schema.safeParse(body);
      expect(parsed.success, label).toBe(true);
      expect(result, label).toEqual(parsed.data);
    }
  });

  it("takes the clients' own bodies without the schema; the codec decides the rest as before", () => {
    expect(bodies.filter(([, body]) => quick(body) !== undefined).map(([label]) => label)).toEqual(taken);
    for (const [label, body] of bodies) {
      const parsed = schema.safeParse(body);
      if (parsed.success) expect(decode(body), label).toEqual(parsed.data);
      else expect(() => decode(body), label).toThrow(/./);
    }
  });
});
