import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  ALLOWED_ACTIONS,
  DECISION_LIMITS,
  exampleHookPayload,
  HOOK_NAMES,
  type HookName,
  publicHookSchema,
  SANITIZE_LIMITS,
  SchemaVersion,
  SECRET_KEYS,
  TOOL_HOOKS,
} from "@geode/contracts";
import { type CommandModule, UsageError } from "../command.js";

/** `docs/hooks.md` of this repository. */
export const HOOKS_DOC_PATH = path.resolve(import.meta.dirname, "../../../../docs/hooks.md");

type Node = Record<string, unknown>;

const node = (value: unknown): Node => (value ?? {}) as Node;
const code = (s: string) => `\`${s}\``;
const list = (items: readonly string[]) => (items.length === 0 ? "—" : items.map(code).join(", "));
const num = (n: number) => n.toLocaleString("en-US");

/** A JSON Schema node as a short human type: `integer`, `array of string`, `object (free)`. */
function jsonType(schema: Node): string {
  if (schema["const"] !== undefined) return `${code(JSON.stringify(schema["const"]))} (const)`;
  const type = schema["type"];
  if (Array.isArray(schema["enum"])) return `${String(type)}: ${(schema["enum"] as string[]).join(" \\| ")}`;
  if (type === "array") {
    const items = jsonType(node(schema["items"]));
    const max = typeof schema["maxItems"] === "number" ? `, at most ${schema["maxItems"]}` : "";
    return `array of ${items}${max}`;
  }
  if (type === "object") {
    if (schema["properties"] !== undefined) return "object (closed)";
    return "object (free)";
  }
  if (type === "integer" && schema["minimum"] === 0) return "integer, ≥ 0";
  const min = typeof schema["minLength"] === "number" && schema["minLength"] > 0 ? ", non-empty" : "";
  return `${String(type)}${min}`;
}

function table(headers: string[], rows: string[][]): string {
  return [
    `| ${headers.join(" | ")} |`,
    `| ${headers.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
}

function fieldRows(schema: Node): string[][] {
  const properties = node(schema["properties"]);
  const required = new Set((schema["required"] as string[] | undefined) ?? []);
  return Object.entries(properties).map(([field, s]) => [
    code(field),
    jsonType(node(s)),
    required.has(field) ? "yes" : "no",
  ]);
}

function payloadSchema(hook: HookName): Node {
  return node(node(publicHookSchema(hook)["properties"])["payload"]);
}

function payloadFields(hook: HookName): { required: string[]; optional: string[] } {
  const schema = payloadSchema(hook);
  const required = (schema["required"] as string[] | undefined) ?? [];
  const optional = Object.keys(node(schema["properties"])).filter(
    (f) => !required.includes(f) && f !== "_redacted_fields",
  );
  return { required, optional };
}

function hookSection(hook: HookName): string {
  const v2 = publicHookSchema(hook, { version: "v2" });
  const v1 = publicHookSchema(hook, { version: "v1" });
  const decision = node(node(v2["properties"])["decision"]);
  const actions = node(node(decision["properties"])["action"])["enum"] as string[];
  const lines = [
    `### ${hook}`,
    "",
    `- allowed actions: ${list(actions)}`,
    `- schema: ${code(String(v2["$id"]))} (v2), ${code(String(v1["$id"]))} (v1)`,
  ];
  if (TOOL_HOOKS.includes(hook)) lines.push("- tool hook: registrations may filter it by `match.tool_name`");
  lines.push(
    "",
    table(["payload field", "JSON type", "required"], fieldRows(payloadSchema(hook))),
    "",
    "Example payload:",
    "",
    "```json",
    JSON.stringify(exampleHookPayload(hook)),
    "```",
  );
  return lines.join("\n");
}

/** The schema nodes the reference is rendered from: one hook's envelope, its correlation (v1 and v2), its decision. */
function schemaNodes() {
  const stop = publicHookSchema("Stop");
  const envelope = node(stop["properties"]);
  return {
    stop,
    envelope,
    correlationV2: node(envelope["correlation"]),
    correlationV1: node(node(publicHookSchema("Stop", { version: "v1" })["properties"])["correlation"]),
    decision: node(envelope["decision"]),
    evidenceRef: node(node(node(node(envelope["payload"])["properties"])["evidence_refs"])["items"]),
  };
}

type Nodes = ReturnType<typeof schemaNodes>;

function summaryAndEnvelope({ stop, envelope }: Nodes): string[] {
  const summaryRows = HOOK_NAMES.map((hook) => {
    const { required, optional } = payloadFields(hook);
    return [code(hook), list(required), list(optional), list(ALLOWED_ACTIONS[hook])];
  });
  return [
    "## Summary",
    "",
    table(["hook", "required payload", "optional", "allowed actions"], summaryRows),
    "",
    "Every payload also admits `_redacted_fields` (array of string, added by sanitizing). Any other",
    "field, a missing required field or a wrong type is an invalid payload.",
    "",
    "## Envelope",
    "",
    "What a handler receives: `{schema_version, name, correlation, payload}`, plus the `decision` it",
    "may return. Every object that declares properties is closed (`additionalProperties: false`);",
    "`arguments`, `result` and `updates` are free objects.",
    "",
    table(
      ["field", "JSON type", "required"],
      fieldRows({
        ...stop,
        properties: { ...envelope, schema_version: { type: "string" }, name: { type: "string" } },
      }),
    ),
    "",
    `\`schema_version\` is ${code(SchemaVersion.V2)} or ${code(SchemaVersion.V1)}; \`name\` is the hook name.`,
    "",
  ];
}

function correlationSection({ correlationV1, correlationV2 }: Nodes): string[] {
  const v1Fields = new Set(Object.keys(node(correlationV1["properties"])));
  return [
    "### Correlation",
    "",
    "All fields are required; unknown fields are refused. A handler registered for v1 receives v1",
    "envelopes (no `step_id`).",
    "",
    table(
      ["field", "JSON type", "v2", "v1"],
      Object.entries(node(correlationV2["properties"])).map(([f, s]) => [
        code(f),
        jsonType(node(s)),
        "yes",
        v1Fields.has(f) ? "yes" : "no",
      ]),
    ),
    "",
  ];
}

function decisionSection({ decision, evidenceRef }: Nodes): string[] {
  const decisionLimits: Record<string, string> = {
    action: "one of the hook's allowed actions",
    reason: `cut to ${num(DECISION_LIMITS.reasonChars)} characters`,
    updates: "only with `rewrite`, then required and non-empty; sanitized like a payload",
    instruction: `cut to ${num(DECISION_LIMITS.instructionChars)} characters`,
    additional_misses: `cut to ${DECISION_LIMITS.additionalMisses} items of ${DECISION_LIMITS.missChars} characters`,
    evidence_refs: `cut to ${DECISION_LIMITS.evidenceRefs} items, fields cut to ${DECISION_LIMITS.evidenceFieldChars} characters`,
  };
  return [
    "## Decision",
    "",
    'A handler returns `{"decision": null}` (no decision: audited as `ok`, never an implicit continue',
    'or permission grant) or `{"decision": {...}}` with these fields:',
    "",
    table(
      ["field", "JSON type", "required", "rule"],
      fieldRows(decision).map(([field, type, required]) => {
        const name = field!.slice(1, -1);
        return [field!, name === "action" ? "string" : type!, required!, decisionLimits[name] ?? ""];
      }),
    ),
    "",
    "Rules (a violation drops the decision, is recorded as `<handler>: <message>`, and the chain goes on):",
    "",
    "- `<action> is not allowed for <HookName>`",
    "- `rewrite requires non-empty updates`",
    "- `updates are only allowed for rewrite decisions`",
    "- `PostVerify revise requires an instruction`",
    "- `Stop continue requires an instruction`",
    "- `PreVerify strengthen requires additional_misses` (an instruction alone is an error)",
    "- a field outside the decision schema is an error",
    "",
    "### Evidence reference",
    "",
    table(["field", "JSON type", "required"], fieldRows(evidenceRef)),
    "",
  ];
}

function limitsSection(): string[] {
  return [
    "## Limits",
    "",
    'Applied to every payload before validation and to every rewrite result ("characters" are Unicode',
    "code points):",
    "",
    `- strings keep their first ${num(SANITIZE_LIMITS.maxStringChars)} characters and get the suffix \`…[truncated:N]\`;`,
    `- objects and arrays keep at most ${SANITIZE_LIMITS.maxCollectionItems} entries (objects record \`_truncated_items\`);`,
    `- depth ${SANITIZE_LIMITS.maxDepth}: deeper values become \`{"_truncated": "max_depth"}\`;`,
    `- object keys are cut to ${SANITIZE_LIMITS.maxKeyChars} characters;`,
    "- text is valid Unicode: a lone UTF-16 surrogate (`\\ud800`), in a value or a key, becomes U+FFFD;",
    `- keys named ${list([...SECRET_KEYS])} (any case) are dropped and listed, sorted, in that object's \`_redacted_fields\`;`,
    "- secret-looking values (API keys, bearer tokens, JWTs, PEM private keys, cloud access keys,",
    "  `password=…` pairs) are masked as `[REDACTED]`; non-finite numbers become strings;",
    `- the whole payload is at most ${SANITIZE_LIMITS.maxPayloadBytes / 1024} KiB of compact UTF-8 JSON: over that, each top-level field`,
    '  is bounded to a share of the budget keeping its JSON type (strings cut, objects replaced by `{"_truncated": true,',
    '  "payload_sha256": "…", "keys": [...]}`, arrays trimmed), so required fields survive.',
    "",
  ];
}

/**
 * The hook reference, generated from the runtime schemas (`publicHookSchema`) and the limits the
 * contract enforces. `docs/hooks.md` is this text; a test fails when the file is stale.
 */
export function renderHooksDoc(): string {
  const nodes = schemaNodes();
  return [
    `# Public hooks (${code(SchemaVersion.V2)})`,
    "",
    "<!-- Generated by `pnpm docs:hooks` from the runtime schemas. Do not edit: a test fails when this file is stale. -->",
    "",
    "The runtime schemas are the canon: `pnpm geode schema <HookName> [--version v1]` prints one",
    "Draft 2020-12 JSON Schema, `pnpm geode schema --all` all 13. This page is generated from them.",
    "",
    ...summaryAndEnvelope(nodes),
    ...correlationSection(nodes),
    ...decisionSection(nodes),
    ...limitsSection(),
    "## Hooks",
    "",
    ...HOOK_NAMES.flatMap((hook) => [hookSection(hook), ""]),
  ].join("\n");
}

export const docsCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        write: { type: "boolean", default: false },
        check: { type: "boolean", default: false },
        out: { type: "string" },
      },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
    if (values.write && values.check) throw new UsageError("give --write or --check, not both");
    const file = values.out !== undefined ? path.resolve(values.out) : HOOKS_DOC_PATH;
    const text = renderHooksDoc();
    if (values.write) {
      writeFileSync(file, text);
      io.out(`wrote ${path.relative(process.cwd(), file) || file}\n`);
      return 0;
    }
    if (values.check) {
      const current = existsSync(file) ? readFileSync(file, "utf8") : null;
      if (current === text) {
        io.out(`${path.relative(process.cwd(), file) || file} is up to date\n`);
        return 0;
      }
      io.err(`${path.relative(process.cwd(), file) || file} is stale: run pnpm docs:hooks\n`);
      return 1;
    }
    io.out(text);
    return 0;
  },
};
