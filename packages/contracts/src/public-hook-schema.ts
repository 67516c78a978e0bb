import { z } from "zod";
import { CorrelationV1Schema, CorrelationV2Schema } from "./correlation.js";
import { decisionSchemaFor } from "./hook-envelope.js";
import { type HookName, isHookName, SchemaVersion, type SchemaVersionLabel } from "./hook-name.js";
import { HookPayloadSchemas } from "./hook-payloads.js";

export const JSON_SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema";

function publicHookSchemaId(name: HookName, version: SchemaVersionLabel): string {
  return `https://geode.dev/schemas/hooks/${version}/${name}.json`;
}

/** The zod schema of the envelope-plus-decision document for one hook and version. */
function publicHookZodSchema(name: HookName, version: SchemaVersionLabel = "v2") {
  return z.strictObject({
    schema_version: z.literal(version === "v1" ? SchemaVersion.V1 : SchemaVersion.V2),
    name: z.literal(name),
    correlation: version === "v1" ? CorrelationV1Schema : CorrelationV2Schema,
    payload: HookPayloadSchemas[name],
    decision: decisionSchemaFor(name).optional(),
  });
}

function closeObjects(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) closeObjects(n);
    return;
  }
  if (node === null || typeof node !== "object") return;
  const o = node as Record<string, unknown>;
  if (o["type"] === "object" && o["properties"] !== undefined && o["additionalProperties"] === undefined) {
    o["additionalProperties"] = false;
  }
  for (const v of Object.values(o)) closeObjects(v);
}

const cache = new Map<string, string>();

/**
 * The canon of a public hook: a fresh Draft 2020-12 JSON Schema object per call (callers may
 * mutate it freely). Generated from the zod contract, never written by hand.
 */
export function publicHookSchema(
  name: HookName,
  options: { version?: SchemaVersionLabel } = {},
): Record<string, unknown> {
  if (!isHookName(name)) throw new TypeError(`unknown hook: ${String(name)}`);
  const version = options.version ?? "v2";
  if (version !== "v1" && version !== "v2") throw new TypeError(`unknown schema version: ${String(version)}`);
  const key = `${version}/${name}`;
  let json = cache.get(key);
  if (json === undefined) {
    const generated = z.toJSONSchema(publicHookZodSchema(name, version), {
      target: "draft-2020-12",
    }) as Record<string, unknown>;
    closeObjects(generated);
    const { $schema: _s, ...rest } = generated;
    const doc = {
      $schema: JSON_SCHEMA_DRAFT,
      $id: publicHookSchemaId(name, version),
      title: name,
      ...rest,
    };
    json = JSON.stringify(doc);
    cache.set(key, json);
  }
  return JSON.parse(json) as Record<string, unknown>;
}
