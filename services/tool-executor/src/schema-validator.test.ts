import { describe, expect, it } from "vitest";
import { SchemaValidator } from "./schema-validator.js";

const schema = (dialect?: string) => ({
  ...(dialect ? { $schema: dialect } : {}),
  type: "object",
  properties: { path: { type: "string" } },
  required: ["path"],
});

describe("SchemaValidator", () => {
  it("validates Draft-07 schemas as MCP servers declare them, the same way every time", () => {
    const v = new SchemaValidator();
    for (let i = 0; i < 3; i++) {
      const s = schema("http://json-schema.org/draft-07/schema#");
      expect(v.problem(s, { path: "a" })).toBeNull();
      expect(v.problem(s, {})).toBe("arguments: must have required property 'path'");
    }
  });

  it("validates 2019-09 and 2020-12 schemas, and those that name no dialect", () => {
    const v = new SchemaValidator();
    for (const d of [
      "https://json-schema.org/draft/2019-09/schema",
      "https://json-schema.org/draft/2020-12/schema",
      undefined,
    ]) {
      expect(v.problem(schema(d), { path: "a" })).toBeNull();
      expect(v.problem(schema(d), { path: 1 })).toBe("arguments.path: must be string");
    }
  });

  it("refuses every call of a schema that does not compile, not only the first", () => {
    const v = new SchemaValidator();
    const s = schema("http://example.com/not-a-dialect");
    for (let i = 0; i < 3; i++)
      expect(v.problem(s, { path: "a" })).toMatch(/^the tool's input_schema does not compile: /);
  });
});
