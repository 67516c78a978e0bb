import { sha256 } from "@geode/contracts";
import AjvDraft07, { type ValidateFunction } from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";

/** A compiled schema, or why it does not compile. */
type Compiled = { validate: ValidateFunction } | { error: string };

/**
 * Validates tool arguments against a tool's JSON Schema, compiled once per schema: Draft 2020-12,
 * or the dialect its `$schema` names (Draft-07 and 2019-09 too: MCP servers often declare
 * Draft-07). A schema that does not compile refuses every call, every time.
 */
export class SchemaValidator {
  private readonly ajv2020 = new Ajv2020({ allErrors: false, strict: false });
  private readonly ajv2019 = new Ajv2019({ allErrors: false, strict: false });
  private readonly ajv07 = new AjvDraft07({ allErrors: false, strict: false });
  private readonly cache = new Map<string, Compiled>();

  private dialect(schema: Record<string, unknown>) {
    const declared = typeof schema["$schema"] === "string" ? schema["$schema"] : "";
    if (/\/draft-07\/schema#?$/.test(declared)) return this.ajv07;
    if (/\/draft\/2019-09\/schema#?$/.test(declared)) return this.ajv2019;
    return this.ajv2020;
  }

  private compile(schema: Record<string, unknown>): Compiled {
    const ajv = this.dialect(schema);
    // A copy, dropped from Ajv's own cache after: Ajv keeps a schema object even when its check
    // failed, and would compile that object unchecked the next time.
    const copy = structuredClone(schema);
    try {
      return { validate: ajv.compile(copy) };
    } catch (err) {
      return { error: `the tool's input_schema does not compile: ${(err as Error).message}` };
    } finally {
      ajv.removeSchema(copy);
    }
  }

  /** What is wrong with `args`, or null. */
  problem(schema: Record<string, unknown>, args: unknown): string | null {
    const key = sha256(schema);
    let compiled = this.cache.get(key);
    if (!compiled) {
      compiled = this.compile(schema);
      if (this.cache.size > 1024) this.cache.clear();
      this.cache.set(key, compiled);
    }
    if ("error" in compiled) return compiled.error;
    const { validate } = compiled;
    if (validate(args)) return null;
    const e = validate.errors?.[0];
    return e
      ? `arguments${e.instancePath.replaceAll("/", ".")}: ${e.message ?? "invalid"}`
      : "invalid arguments";
  }
}
