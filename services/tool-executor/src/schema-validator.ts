import { sha256 } from "@geode/contracts";
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020.js";

/** Validates tool arguments against a tool's JSON Schema (Draft 2020-12); compiled once per schema. */
export class SchemaValidator {
  private readonly ajv = new Ajv2020({ allErrors: false, strict: false });
  private readonly cache = new Map<string, ValidateFunction>();

  /** What is wrong with `args`, or null. A schema that does not compile refuses everything. */
  problem(schema: Record<string, unknown>, args: unknown): string | null {
    const key = sha256(schema);
    let validate = this.cache.get(key);
    if (!validate) {
      try {
        validate = this.ajv.compile(schema);
      } catch (err) {
        return `the tool's input_schema does not compile: ${(err as Error).message}`;
      }
      if (this.cache.size > 1024) this.cache.clear();
      this.cache.set(key, validate);
    }
    if (validate(args)) return null;
    const e = validate.errors?.[0];
    return e
      ? `arguments${e.instancePath.replaceAll("/", ".")}: ${e.message ?? "invalid"}`
      : "invalid arguments";
  }
}
