import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { correlation } from "./correlation.js";
import { hookEnvelope } from "./hook-envelope.js";
import { exampleHookPayload } from "./hook-examples.js";
import { ALLOWED_ACTIONS, HOOK_NAMES, type HookName } from "./hook-name.js";
import { HookPayloadSchemas } from "./hook-payloads.js";
import { JSON_SCHEMA_DRAFT, publicHookSchema } from "./public-hook-schema.js";
import { validateHookPayload } from "./validate-payload.js";

const VERSIONS = ["v1", "v2"] as const;
const ids = correlation({ session_id: "s-1", turn_id: "t-1", step_id: "st-1", run_id: "r-1" });

function strictAjv() {
  return new Ajv2020({ strict: true, strictTypes: true, strictTuples: true, allErrors: true });
}

const shared = strictAjv();
const compiled = new Map<string, ReturnType<typeof shared.compile>>();
function compile(hook: HookName, version: "v1" | "v2") {
  const key = `${version}/${hook}`;
  let validate = compiled.get(key);
  if (validate === undefined) {
    validate = shared.compile(publicHookSchema(hook, { version }));
    compiled.set(key, validate);
  }
  return validate;
}

function envelope(hook: HookName, version: "v1" | "v2", decision?: unknown) {
  const payload = validateHookPayload(hook, exampleHookPayload(hook));
  if (!payload.ok) throw new Error(payload.error);
  const env: Record<string, unknown> = { ...hookEnvelope(hook, ids, payload.payload, version) };
  if (decision !== undefined) env["decision"] = decision;
  return env;
}

/** Every object node of a schema that declares `properties`, with its JSON pointer. */
function objectNodes(node: unknown, at = "#"): Array<[string, Record<string, unknown>]> {
  if (node === null || typeof node !== "object") return [];
  if (Array.isArray(node)) return node.flatMap((n, i) => objectNodes(n, `${at}/${i}`));
  const o = node as Record<string, unknown>;
  const own: Array<[string, Record<string, unknown>]> = o["properties"] !== undefined ? [[at, o]] : [];
  return [...own, ...Object.entries(o).flatMap(([k, v]) => objectNodes(v, `${at}/${k}`))];
}

describe("publicHookSchema", () => {
  it.each(VERSIONS)(
    "gives 13 %s schemas that pass the Draft 2020-12 meta-schema in strict mode",
    (version) => {
      const ajv = strictAjv();
      for (const hook of HOOK_NAMES) {
        const schema = publicHookSchema(hook, { version });
        expect(ajv.validateSchema(schema), `${hook} ${JSON.stringify(ajv.errors)}`).toBe(true);
        expect(() => compile(hook, version)).not.toThrow();
      }
      expect(HOOK_NAMES).toHaveLength(13);
    },
  );

  it.each(VERSIONS)("carries $schema, a per-version $id, the title and the consts (%s)", (version) => {
    for (const hook of HOOK_NAMES) {
      const s = publicHookSchema(hook, { version }) as {
        $schema: string;
        $id: string;
        title: string;
        required: string[];
        properties: Record<string, { const?: string }>;
      };
      expect(s.$schema).toBe(JSON_SCHEMA_DRAFT);
      expect(s.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(s.$id).toBe(`https://geode.dev/schemas/hooks/${version}/${hook}.json`);
      expect(s.title).toBe(hook);
      expect(s.properties["schema_version"]?.const).toBe(`geode.public-hook.${version}`);
      expect(s.properties["name"]?.const).toBe(hook);
      expect(s.required).toEqual(["schema_version", "name", "correlation", "payload"]);
      expect(Object.keys(s.properties)).toEqual([
        "schema_version",
        "name",
        "correlation",
        "payload",
        "decision",
      ]);
    }
  });

  it("defaults to v2", () => {
    expect(publicHookSchema("Stop")).toEqual(publicHookSchema("Stop", { version: "v2" }));
  });

  it("lists exactly the hook's allowed actions in the decision's action enum", () => {
    for (const hook of HOOK_NAMES) {
      const s = publicHookSchema(hook) as {
        properties: { decision: { properties: { action: { enum: string[] } }; required: string[] } };
      };
      expect(s.properties.decision.properties.action.enum).toEqual([...ALLOWED_ACTIONS[hook]]);
      expect(s.properties.decision.required).toEqual(["action"]);
      expect(Object.keys(s.properties.decision.properties)).toEqual([
        "action",
        "reason",
        "updates",
        "instruction",
        "additional_misses",
        "evidence_refs",
      ]);
    }
  });

  it("closes every object that declares properties (additionalProperties: false)", () => {
    for (const version of VERSIONS) {
      for (const hook of HOOK_NAMES) {
        const nodes = objectNodes(publicHookSchema(hook, { version }));
        // envelope, correlation, payload, decision at least.
        expect(nodes.length).toBeGreaterThanOrEqual(4);
        for (const [at, node] of nodes) expect(node["additionalProperties"], `${hook} ${at}`).toBe(false);
      }
    }
  });

  it("leaves arguments, result and updates free objects", () => {
    const s = publicHookSchema("PostToolUse") as {
      properties: {
        payload: { properties: Record<string, { type: string; additionalProperties: unknown }> };
      };
    };
    for (const field of ["arguments", "result"]) {
      expect(s.properties.payload.properties[field]?.type).toBe("object");
      expect(s.properties.payload.properties[field]?.additionalProperties).not.toBe(false);
    }
    const validate = compile("PostToolUse", "v2");
    const env = envelope("PostToolUse", "v2", { action: "continue" });
    (env["payload"] as { result: Record<string, unknown> }).result["anything"] = { nested: [1, "two"] };
    expect(validate(env), JSON.stringify(validate.errors)).toBe(true);
  });

  it("has exactly 8 correlation fields in order for v1 and 9 for v2", () => {
    const v1 = publicHookSchema("UserPromptSubmit", { version: "v1" }) as {
      properties: { correlation: { properties: object; required: string[] } };
    };
    const v2 = publicHookSchema("UserPromptSubmit", { version: "v2" }) as typeof v1;
    const v2Fields = [
      "session_id",
      "turn_id",
      "step_id",
      "run_id",
      "session_generation",
      "verify_attempt",
      "tool_call_id",
      "llm_call_id",
      "llm_attempt_id",
    ];
    const v1Fields = v2Fields.filter((f) => f !== "step_id");
    expect(Object.keys(v2.properties.correlation.properties)).toEqual(v2Fields);
    expect(v2.properties.correlation.required).toEqual(v2Fields);
    expect(Object.keys(v1.properties.correlation.properties)).toEqual(v1Fields);
    expect(v1.properties.correlation.required).toEqual(v1Fields);
  });

  it("returns a defensive copy: mutating it changes nothing for the next caller", () => {
    const first = publicHookSchema("PreToolUse") as Record<string, unknown> & {
      properties: { decision: { properties: { action: { enum: string[] } } } };
    };
    const pristine = structuredClone(first);
    first.properties.decision.properties.action.enum.push("allow");
    first["title"] = "changed";
    delete (first as { properties?: unknown }).properties;
    const again = publicHookSchema("PreToolUse");
    expect(again).toEqual(pristine);
    expect(again).not.toBe(first);
  });

  it("refuses unknown hooks and versions", () => {
    expect(() => publicHookSchema("PreToolUse2" as HookName)).toThrow(/unknown hook/);
    expect(() => publicHookSchema("Stop", { version: "v3" as "v2" })).toThrow(/unknown schema version/);
  });
});

describe("envelopes built by the package against the schemas", () => {
  it.each(VERSIONS)("validate for all 13 hooks, with and without a decision (%s)", (version) => {
    for (const hook of HOOK_NAMES) {
      const validate = compile(hook, version);
      const bare = envelope(hook, version);
      expect(validate(bare), `${hook} ${JSON.stringify(validate.errors)}`).toBe(true);
      const decision: Record<string, unknown> = { action: ALLOWED_ACTIONS[hook][0], reason: "policy" };
      expect(validate(envelope(hook, version, decision)), `${hook} ${JSON.stringify(validate.errors)}`).toBe(
        true,
      );
      // The zod contract agrees with its JSON Schema.
      expect(HookPayloadSchemas[hook].safeParse(bare["payload"]).success).toBe(true);
    }
  });

  it("v1 envelopes carry no step_id and fail the v2 schema; v2 envelopes fail the v1 schema", () => {
    const v1 = envelope("PreToolUse", "v1");
    expect(v1["correlation"]).not.toHaveProperty("step_id");
    expect(compile("PreToolUse", "v2")(v1)).toBe(false);
    expect(compile("PreToolUse", "v1")(envelope("PreToolUse", "v2"))).toBe(false);
  });

  it.each(VERSIONS)("reject an unknown field at every level (%s)", (version) => {
    for (const hook of HOOK_NAMES) {
      const validate = compile(hook, version);
      const top = { ...envelope(hook, version), extra: 1 };
      expect(validate(top), `${hook} top`).toBe(false);
      const corr = envelope(hook, version);
      (corr["correlation"] as Record<string, unknown>)["tenant"] = "x";
      expect(validate(corr), `${hook} correlation`).toBe(false);
      const payload = envelope(hook, version);
      (payload["payload"] as Record<string, unknown>)["surprise"] = true;
      expect(validate(payload), `${hook} payload`).toBe(false);
      const decision = envelope(hook, version, { action: ALLOWED_ACTIONS[hook][0], confidence: 1 });
      expect(validate(decision), `${hook} decision`).toBe(false);
    }
  });

  it("rejects a missing required field and a wrong type in every hook's payload", () => {
    for (const hook of HOOK_NAMES) {
      const validate = compile(hook, "v2");
      const required = Object.keys(exampleHookPayload(hook)).filter(
        (k) => !(HookPayloadSchemas[hook].shape as Record<string, ZodType>)[k]?.safeParse(undefined).success,
      );
      expect(required.length).toBeGreaterThan(0);
      for (const field of required) {
        const missing = envelope(hook, "v2");
        delete (missing["payload"] as Record<string, unknown>)[field];
        expect(validate(missing), `${hook} without ${field}`).toBe(false);
        const wrong = envelope(hook, "v2");
        const p = wrong["payload"] as Record<string, unknown>;
        // A value of a different JSON type than the example's.
        p[field] = typeof p[field] === "string" ? 42 : "not-the-type";
        expect(validate(wrong), `${hook} ${field} wrong type`).toBe(false);
      }
      const noCorrelation = envelope(hook, "v2");
      delete noCorrelation["correlation"];
      expect(validate(noCorrelation)).toBe(false);
    }
  });

  it("rejects a disallowed action, a wrong const and a non-integer count", () => {
    expect(compile("UserPromptSubmit", "v2")(envelope("UserPromptSubmit", "v2", { action: "accept" }))).toBe(
      false,
    );
    expect(
      compile("PermissionRequest", "v2")(envelope("PermissionRequest", "v2", { action: "continue" })),
    ).toBe(false);
    expect(compile("Stop", "v2")(envelope("Stop", "v2", { reason: "no action" }))).toBe(false);
    expect(compile("Stop", "v2")({ ...envelope("Stop", "v2"), name: "PostVerify" })).toBe(false);
    expect(compile("Stop", "v1")({ ...envelope("Stop", "v1"), schema_version: "geode.public-hook.v2" })).toBe(
      false,
    );
    const fractional = envelope("PreVerify", "v2");
    (fractional["payload"] as Record<string, unknown>)["rounds"] = 1.5;
    expect(compile("PreVerify", "v2")(fractional)).toBe(false);
  });

  it("rejects more than 32 evidence_refs and an unknown evidence kind in a Stop payload", () => {
    const validate = compile("Stop", "v2");
    const tooMany = envelope("Stop", "v2");
    const p = tooMany["payload"] as { evidence_refs: unknown[] };
    p.evidence_refs = Array.from({ length: 33 }, (_, i) => ({
      kind: "legacy",
      schema_id: "s",
      authority: "a",
      reference: `r${i}`,
    }));
    expect(validate(tooMany)).toBe(false);
    p.evidence_refs = p.evidence_refs.slice(0, 32);
    expect(validate(tooMany), JSON.stringify(validate.errors)).toBe(true);
    p.evidence_refs = [{ kind: "gossip", schema_id: "s", authority: "a", reference: "r" }];
    expect(validate(tooMany)).toBe(false);
    p.evidence_refs = [{ kind: "legacy", schema_id: "", authority: "a", reference: "r" }];
    expect(validate(tooMany)).toBe(false);
  });
});
