import { createHash } from "node:crypto";
import { z } from "zod";
import { AgentGroupSchema } from "./agent-record.js";
import { FreeObjectSchema } from "./hook-payloads.js";
import { TOOL_NAME_PATTERN } from "./names.js";

/* The MCP gateway's shared shapes (DESIGN section 19): upstream server records in KV
 * `{ns}_mcp_servers`, the remote tools the mcp-bridge registers for them, the forwarding request
 * the agent-gateway sends the bridge for resources and prompts, and the bridge's events. */

/** Upstream server names (KV `{ns}_mcp_servers` keys); the registered tools are `{server}_{tool}`. */
export const MCP_SERVER_NAME_PATTERN = /^[a-z][a-z0-9]{0,15}$/;
/** Environment variable names a record passes through (never values). */
const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** A header value in a record: only a reference to an environment variable of the bridge. */
const HEADER_VALUE_PATTERN = /^\$[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_NAME_PATTERN = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
const GLOB = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_.*?-]+$/, "tool globs use [A-Za-z0-9_.-] and * ?");

export const McpServerNameSchema = z
  .string()
  .regex(MCP_SERVER_NAME_PATTERN, "MCP server names match [a-z][a-z0-9]{0,15}");

const ToolEffectSchema = z.enum(["read", "mutation", "communication", "admin"]);

/** One upstream MCP server, as `geode mcp add` writes it. */
export const McpServerRecordSchema = z
  .strictObject({
    name: McpServerNameSchema,
    transport: z.enum(["stdio", "http"]),
    command: z.string().min(1).max(4096).optional(),
    args: z.array(z.string().max(4096)).max(64).optional(),
    /** Variables passed through from the bridge's environment to a stdio server: names only. */
    env: z.array(z.string().regex(ENV_NAME_PATTERN, "env lists variable names")).max(64).optional(),
    url: z.string().max(2048).optional(),
    /** Headers of an HTTP server, each the name of a bridge variable holding the value (`$VAR`). */
    headers: z
      .record(
        z.string().regex(HEADER_NAME_PATTERN, "header names are HTTP tokens"),
        z.string().regex(HEADER_VALUE_PATTERN, "header values name a variable: '$VARIABLE'"),
      )
      .optional(),
    /** Allow globs over the upstream's tool names; absent: all. */
    tools: z.array(GLOB).max(256).optional(),
    /** Effects by tool glob; the first glob that matches wins. */
    effects: z.record(GLOB, ToolEffectSchema).optional(),
    /** Tool globs that need a person's approval. */
    approve: z.array(GLOB).max(256).optional(),
    /** Agent groups that see the server's tools; absent: every agent. */
    groups: z.array(AgentGroupSchema).max(32).optional(),
    created_at: z.number().int(),
    updated_by: z.string().min(1).max(128),
  })
  .superRefine((r, ctx) => {
    if (r.transport === "stdio") {
      if (r.command === undefined)
        ctx.addIssue({ code: "custom", path: ["command"], message: "a stdio server needs a command" });
      if (r.url !== undefined || r.headers !== undefined)
        ctx.addIssue({ code: "custom", path: ["url"], message: "a stdio server has no url or headers" });
    } else {
      if (r.url === undefined || !isHttpUrl(r.url))
        ctx.addIssue({ code: "custom", path: ["url"], message: "an http server needs an http(s) url" });
      if (r.command !== undefined || r.args !== undefined || r.env !== undefined)
        ctx.addIssue({
          code: "custom",
          path: ["command"],
          message: "an http server has no command, args or env",
        });
    }
  });
export type McpServerRecord = z.infer<typeof McpServerRecordSchema>;

function isHttpUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === "http:" || u.protocol === "https:") && u.username === "" && u.password === "";
  } catch {
    return false;
  }
}

/** The MCP tool annotations the plane reads (other keys are dropped). */
export const McpToolAnnotationsSchema = z.strictObject({
  title: z.string().max(256).optional(),
  readOnlyHint: z.boolean().optional(),
  destructiveHint: z.boolean().optional(),
  idempotentHint: z.boolean().optional(),
  openWorldHint: z.boolean().optional(),
});
export type McpToolAnnotations = z.infer<typeof McpToolAnnotationsSchema>;

/** What a registered MCP tool's definition (KV `{ns}_tools`) carries about its upstream. */
export const McpToolOriginSchema = z.strictObject({
  server: McpServerNameSchema,
  /** The upstream's own name of the tool. */
  tool: z.string().min(1).max(1024),
  annotations: McpToolAnnotationsSchema,
});
export type McpToolOrigin = z.infer<typeof McpToolOriginSchema>;

/**
 * The registered name of upstream tool `tool` of `server`: `{server}_{tool}`. A name over 64
 * characters, or with characters a tool name cannot hold, is cut (those characters become `_`) and
 * ends in 8 hex of the sha256 of the full name, so two upstream tools never share a name.
 */
export function mcpToolName(server: string, tool: string): string {
  const full = `${server}_${tool}`;
  if (TOOL_NAME_PATTERN.test(full)) return full;
  const hash = createHash("sha256").update(full, "utf8").digest("hex").slice(0, 8);
  return `${full.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 55)}_${hash}`;
}

/**
 * The MCP origin of a tool definition (KV `{ns}_tools`) the mcp-bridge registered: its `mcp`, when
 * its name is the one the bridge gives that upstream tool ({@link mcpToolName}); else undefined,
 * and the tool is no MCP tool for policies (DESIGN section 19).
 */
export function registeredMcpOrigin(definition: {
  name: string;
  mcp?: McpToolOrigin | undefined;
}): McpToolOrigin | undefined {
  const origin = definition.mcp;
  return origin && mcpToolName(origin.server, origin.tool) === definition.name ? origin : undefined;
}

/**
 * Whether a tool name has the form of a registered MCP tool (`{server}_{tool}`, as
 * {@link mcpToolName} gives it). The form alone proves nothing: only a definition in KV
 * `{ns}_tools` carrying `mcp` makes a tool an MCP tool; the form says where to look.
 */
export function hasMcpToolNameForm(name: string): boolean {
  return /^[a-z][a-z0-9]{0,15}_/.test(name) && TOOL_NAME_PATTERN.test(name);
}

/**
 * The effect of an upstream tool (DESIGN section 19): the record's `effects` first, else
 * `readOnlyHint` → `read`, else `openWorldHint: true` → `communication`, else `mutation`, so a
 * receipt guards every tool that does not say it only reads.
 */
export function mcpToolEffect(
  record: Pick<McpServerRecord, "effects">,
  tool: string,
  annotations: McpToolAnnotations,
  matches: (glob: string, name: string) => boolean,
): z.infer<typeof ToolEffectSchema> {
  for (const [glob, effect] of Object.entries(record.effects ?? {})) if (matches(glob, tool)) return effect;
  if (annotations.readOnlyHint === true) return "read";
  if (annotations.openWorldHint === true) return "communication";
  return "mutation";
}

/** Methods the agent-gateway forwards to the bridge beside tool calls. */
export const MCP_FORWARDED_METHODS = [
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "prompts/list",
  "prompts/get",
] as const;
export const McpForwardedMethodSchema = z.enum(MCP_FORWARDED_METHODS);
export type McpForwardedMethod = z.infer<typeof McpForwardedMethodSchema>;

/**
 * The agent-gateway's request to the bridge on `{ns}.mcp.forward.{server}`: one MCP method of the
 * upstream, its params with the `{server}_` prefix already taken off. Reply: `{result}` (the
 * upstream's result as it came) or the error reply of docs/protocol.md.
 */
export const McpForwardRequestSchema = z.strictObject({
  method: McpForwardedMethodSchema,
  params: FreeObjectSchema,
  timeout_ms: z.number().int().min(1).max(600_000).optional(),
});
export type McpForwardRequest = z.infer<typeof McpForwardRequestSchema>;

/** Payload of `mcp_server_connected`. */
export const McpServerConnectedSchema = z.strictObject({
  server: McpServerNameSchema,
  transport: z.enum(["stdio", "http"]),
  protocol_version: z.string().max(64),
  tools: z.number().int().min(0),
});

/** Payload of `mcp_server_failed`: `retry_in_ms` null once the bridge stops trying (server removed). */
export const McpServerFailedSchema = z.strictObject({
  server: McpServerNameSchema,
  transport: z.enum(["stdio", "http"]),
  error: z.string().max(1024),
  attempt: z.number().int().min(1),
  retry_in_ms: z.number().int().min(0).nullable(),
});

/** Payload of the timeline record `mcp.read`. */
export const McpReadRecordSchema = z.strictObject({
  server: McpServerNameSchema,
  method: McpForwardedMethodSchema,
  uri_or_name: z.string().max(2048),
});

/** One upstream's state in the mcp-bridge's health reply (`servers`), what `geode mcp ls` shows. */
export const McpServerStateSchema = z.strictObject({
  name: McpServerNameSchema,
  transport: z.enum(["stdio", "http"]),
  /** `connecting` until the first `tools/list`; `failed` while waiting for the next attempt. */
  state: z.enum(["connecting", "connected", "failed"]),
  /** Tools registered for it now (0 unless connected). */
  tools: z.number().int().min(0),
  protocol_version: z.string().max(64).nullable(),
  /** The last connection or list error, one line; null when none since it connected. */
  last_error: z.string().max(1024).nullable(),
  /** Connection attempts since the last success (0 when connected). */
  attempts: z.number().int().min(0),
  since: z.number().int(),
});
export type McpServerState = z.infer<typeof McpServerStateSchema>;
