import { RequestFailedError, requestJson } from "@geode/bus";
import {
  type ConsoleMcpServer,
  type ConsoleMcpServers,
  HealthLeg,
  isMalformedReply,
  type McpServerRecord,
  type McpServerState,
  registeredMcpOrigin,
  type ToolDefinition,
} from "@geode/contracts";
import { McpServerStore, ToolStore } from "@geode/state";
import { sql } from "kysely";
import type { ConsoleDeps, Route } from "./console-route.js";
import { ApiError, sendJson } from "./http-io.js";
import { type ConsoleProjection, tables } from "./session-list.js";
import { fromProjection } from "./session-routes.js";

/** The service whose health reply carries each upstream's live state. */
const BRIDGE = "mcp-bridge";
/** How long the view waits for the bridge's health reply before it says `unknown`. */
const HEALTH_TIMEOUT_MS = 1_500;
/** Calls and blocks per tool are counted over the last 24 hours. */
const MCP_CALLS_WINDOW_MS = 24 * 60 * 60_000;
/** Shown strings are cut to this many characters. */
const TEXT_CHARS = 512;

const cut = (s: string, n = TEXT_CHARS) => (s.length > n ? `${[...s].slice(0, n - 1).join("")}…` : s);

/** What a record runs or reaches: the command line of a stdio server, the URL of an HTTP one. */
function targetOf(r: McpServerRecord): string {
  if (r.transport === "http") return r.url ?? "";
  return [r.command ?? "", ...(r.args ?? [])]
    .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a)))
    .join(" ");
}

/** The bridge's view of each upstream, or null when no bridge answered in time (or answered badly). */
async function bridgeStates(d: ConsoleDeps): Promise<Map<string, McpServerState> | null> {
  try {
    const reply = await requestJson(
      d.conn,
      d.conn.names.health(BRIDGE),
      {},
      { timeoutMs: HEALTH_TIMEOUT_MS, reply: HealthLeg.reply },
    );
    return new Map((reply.servers ?? []).map((s) => [s.name, s]));
  } catch (err) {
    if (err instanceof RequestFailedError || isMalformedReply(err)) return null;
    d.log.warn({ err }, "mcp-bridge health unreadable");
    return null;
  }
}

interface CountRow {
  tool_name: string;
  calls: string | number;
  blocks: string | number;
}

/**
 * Per registered tool name among `names`: the calls attempted over the window (distinct call ids of
 * the `tool.called` / `tool.completed` records) and those blocked or denied (a completion recorded
 * `blocked` or `denied`).
 */
async function mcpToolCalls(
  p: ConsoleProjection,
  names: string[],
  now = Date.now(),
  windowMs = MCP_CALLS_WINDOW_MS,
): Promise<Map<string, { calls: number; blocks: number }>> {
  const out = new Map<string, { calls: number; blocks: number }>();
  if (names.length === 0) return out;
  const t = tables(p.ns);
  const { rows } = await sql<CountRow>`
    with calls as (
      select coalesce(nullif(tool_call_id, ''), 'r:' || record_id) as k,
             (array_agg(payload->>'tool_name') filter (where payload ? 'tool_name'))[1] as tool_name,
             bool_or(kind = 'tool.completed' and payload->>'status' in ('blocked', 'denied')) as stopped
      from ${t.timeline}
      where kind in ('tool.called', 'tool.completed') and ts >= ${now - windowMs} and ts <= ${now}
      group by 1
    )
    select tool_name, count(*) as calls, count(*) filter (where stopped) as blocks
    from calls where tool_name in (${sql.join(names)}) group by tool_name`.execute(p.db);
  for (const r of rows) out.set(r.tool_name, { calls: Number(r.calls), blocks: Number(r.blocks) });
  return out;
}

function toolView(def: ToolDefinition, tool: string, counts?: { calls: number; blocks: number }) {
  const a = def.mcp?.annotations ?? {};
  return {
    name: def.name,
    tool: cut(tool),
    effect: def.effect,
    requires_approval: def.requires_approval === true,
    read_only: a.readOnlyHint === true,
    destructive: a.destructiveHint === true,
    open_world: a.openWorldHint === true,
    calls: counts?.calls ?? 0,
    blocks: counts?.blocks ?? 0,
  };
}

/**
 * `GET /api/mcp/servers`: each upstream record (never its env or header values), the bridge's live
 * state of it, its registered tools with their calls and blocks over the last 24 hours.
 */
export const MCP_ROUTES: Route[] = [
  {
    method: "GET",
    pattern: /^\/api\/mcp\/servers$/,
    async handle(d, r) {
      const [records, defs] = await Promise.all([
        McpServerStore.open(d.conn).then((s) =>
          s.list((key) => d.log.warn({ key }, "skipping malformed MCP server record")),
        ),
        ToolStore.open(d.conn).then((s) => s.list()),
      ]).catch((err: unknown) => {
        d.log.warn({ err }, "MCP servers unreadable");
        throw new ApiError(
          503,
          "unavailable",
          `the MCP servers could not be read: KV ${d.conn.names.buckets.mcpServers} or ${d.conn.names.buckets.tools} is unreachable`,
        );
      });
      const states = records.length > 0 ? await bridgeStates(d) : null;
      const byServer = new Map<string, Array<{ def: ToolDefinition; tool: string }>>();
      for (const def of defs) {
        const origin = registeredMcpOrigin(def);
        if (origin)
          byServer.set(origin.server, [...(byServer.get(origin.server) ?? []), { def, tool: origin.tool }]);
      }
      const mcpNames = [...byServer.values()].flat().map((t) => t.def.name);
      const counts = d.projection ? await fromProjection(d, (p) => mcpToolCalls(p, mcpNames)) : new Map();
      const items = records.map((rec): ConsoleMcpServer => {
        const s = states?.get(rec.name);
        return {
          name: rec.name,
          transport: rec.transport,
          target: cut(targetOf(rec)),
          groups: rec.groups ?? null,
          allow: rec.tools ?? null,
          state: s?.state ?? (states === null ? "unknown" : "not seen"),
          tools_count: s?.tools ?? null,
          last_error: s?.last_error == null ? null : cut(s.last_error),
          tools: (byServer.get(rec.name) ?? [])
            .sort((a, b) => (a.def.name < b.def.name ? -1 : 1))
            .map((t) => toolView(t.def, t.tool, counts.get(t.def.name))),
        };
      });
      sendJson(r.res, 200, {
        window_ms: MCP_CALLS_WINDOW_MS,
        bridge: states !== null,
        items,
      } satisfies ConsoleMcpServers);
    },
  },
];
