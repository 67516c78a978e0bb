import { describe, expect, it } from "vitest";
import { SchemaValidator } from "./schema-validator.js";

const object = (extra: Record<string, unknown>) => ({
  type: "object",
  properties: { path: { type: "string" } },
  required: ["path"],
  ...extra,
});

describe("SchemaValidator", () => {
  it("reads a draft-07 schema (as zod-based MCP servers send) from the first call on", () => {
    const schema = object({ $schema: "http://json-schema.org/draft-07/schema#" });
    const v = new SchemaValidator();
    expect(v.problem(schema, { path: "a.txt" })).toBeNull();
    expect(v.problem(schema, { path: 1 })).toBe("arguments.path: must be string");
    // Draft-07's array form of items, which 2020-12 spells prefixItems.
    const tuple = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "array",
      items: [{ type: "string" }, { type: "number" }],
    };
    expect(v.problem(tuple, ["a", 1])).toBeNull();
    expect(v.problem(tuple, ["a", "b"])).toBe("arguments.1: must be number");
  });

  it("reads 2020-12 without $schema and 2019-09 when named", () => {
    const v = new SchemaValidator();
    const tuple = { type: "array", prefixItems: [{ type: "string" }], items: false };
    expect(v.problem(tuple, ["a"])).toBeNull();
    expect(v.problem(tuple, ["a", "b"])).not.toBeNull();
    const schema = object({ $schema: "https://json-schema.org/draft/2019-09/schema" });
    expect(v.problem(schema, { path: "a" })).toBeNull();
    expect(v.problem(schema, {})).toBe("arguments: must have required property 'path'");
  });

  it("a schema that does not compile refuses every call, the same object again too", () => {
    const v = new SchemaValidator();
    const broken = object({ $schema: "http://example.com/unknown-dialect#" });
    for (let i = 0; i < 3; i++)
      expect(v.problem(broken, { path: "a" })).toMatch(/^the tool's input_schema does not compile: /);
    const bad = { type: "object", properties: { path: { type: "no-such-type" } } };
    expect(v.problem(bad, { path: "a" })).toMatch(/does not compile/);
    expect(v.problem(bad, { path: "a" })).toMatch(/does not compile/);
  });
});
