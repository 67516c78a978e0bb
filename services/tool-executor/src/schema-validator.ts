import { sha256 } from "@geode/contracts";
import Ajv07, { type ValidateFunction } from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";

type Dialect = "2020-12" | "2019-09" | "draft-07";

/**
 * The dialect a schema's `$schema` names: draft-07 (what MCP servers built on zod's JSON Schema
 * output send), 2019-09, else 2020-12 (MCP's default when `$schema` is absent).
 */
function dialectOf(schema: Record<string, unknown>): Dialect {
  const uri = typeof schema["$schema"] === "string" ? schema["$schema"] : "";
  if (/^https?:\/\/json-schema\.org\/draft-07\/schema#?$/.test(uri)) return "draft-07";
  if (/^https?:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/.test(uri)) return "2019-09";
  return "2020-12";
}

/**
 * Validates tool arguments against a tool's JSON Schema in the dialect its `$schema` names
 * (Draft 2020-12 when it names none); compiled once per schema.
 */
export class SchemaValidator {
  private readonly ajv: Record<Dialect, { compile(schema: object): ValidateFunction }>;
  /** A compiled schema, or why it does not compile. */
  private readonly cache = new Map<string, ValidateFunction | string>();

  constructor() {
    const options = { allErrors: false, strict: false };
    this.ajv = {
      "2020-12": new Ajv2020(options),
      "2019-09": new Ajv2019(options),
      "draft-07": new Ajv07(options),
    };
  }

  /** What is wrong with `args`, or null. A schema that does not compile refuses everything. */
  problem(schema: Record<string, unknown>, args: unknown): string | null {
    const key = sha256(schema);
    let validate = this.cache.get(key);
    if (validate === undefined) {
      // A copy, and a failure kept: the engine keeps what it compiled keyed by the object, a failed
      // one too, and given the same object again it would pass its half-built copy.
      try {
        validate = this.ajv[dialectOf(schema)].compile(structuredClone(schema));
      } catch (err) {
        validate = `the tool's input_schema does not compile: ${(err as Error).message}`;
      }
      if (this.cache.size > 1024) this.cache.clear();
      this.cache.set(key, validate);
    }
    if (typeof validate === "string") return validate;
    if (validate(args)) return null;
    const e = validate.errors?.[0];
    return e
      ? `arguments${e.instancePath.replaceAll("/", ".")}: ${e.message ?? "invalid"}`
      : "invalid arguments";
  }
}
