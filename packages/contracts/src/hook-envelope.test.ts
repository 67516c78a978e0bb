import { describe, expect, it } from "vitest";
import { correlation } from "./correlation.js";
import {
  HookEnvelopeSchema,
  HookInvokeRequestSchema,
  hookEnvelope,
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

describe("the quick invoke-request check", () => {
  it("takes only what the schema accepts, and returns what the schema returns", () => {
    for (const [label, body] of invokeBodies) {
      const taken = quickInvokeRequest(body);
      if (taken === undefined) continue;
      const parsed = HookInvokeRequestSchema.safeParse(body);
      expect(parsed.success, label).toBe(true);
      expect(taken, label).toEqual(parsed.data);
    }
  });

  it("takes the clients' complete requests without the schema, and the codec still refuses the rest", () => {
    const taken = invokeBodies.filter(([, body]) => quickInvokeRequest(body) !== undefined).map(([l]) => l);
    expect(taken).toEqual([
      "the hook client's request",
      "no timeout",
      "from JSON text",
      "empty payload",
      "a payload without a prototype",
    ]);
    for (const [label, body] of invokeBodies) {
      const parsed = HookInvokeRequestSchema.safeParse(body);
      if (parsed.success) expect(HookInvokeLeg.request.decode(body), label).toEqual(parsed.data);
      else expect(() => HookInvokeLeg.request.decode(body), label).toThrow(/./);
    }
  });
});

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

describe("the quick handler-envelope check", () => {
  it("takes only what the schema accepts, and returns what the schema returns", () => {
    for (const [label, body] of envelopeBodies) {
      const taken = quickHookEnvelope(body);
      if (taken === undefined) continue;
      const parsed = HookEnvelopeSchema.safeParse(body);
      expect(parsed.success, label).toBe(true);
      expect(taken, label).toEqual(parsed.data);
    }
  });

  it("takes the dispatcher's v2 envelopes without the schema; the codec decides the rest as before", () => {
    const taken = envelopeBodies.filter(([, body]) => quickHookEnvelope(body) !== undefined).map(([l]) => l);
    expect(taken).toEqual([
      "the dispatcher's v2 envelope",
      "from JSON text",
      "v1 label with a v2 correlation",
    ]);
    for (const [label, body] of envelopeBodies) {
      const parsed = HookEnvelopeSchema.safeParse(body);
      if (parsed.success) expect(HookHandlerLeg.request.decode(body), label).toEqual(parsed.data);
      else expect(() => HookHandlerLeg.request.decode(body), label).toThrow(/./);
    }
  });
});
