import { parseArgs } from "node:util";
import { connectBus, type GeodeConnection, RequestFailedError, requestJson } from "@geode/bus";
import {
  names as buildNames,
  HealthLeg,
  isMalformedReply,
  McpServerNameSchema,
  type McpServerRecord,
  McpServerRecordSchema,
  type McpServerState,
  type ToolDefinition,
} from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { McpServerStore, ToolStore } from "@geode/state";
import { type CommandIO, type CommandModule, UsageError } from "../command.js";
import { operatorName } from "../operator-name.js";
import { renderTable } from "../render-table.js";

/** The service whose health reply carries each upstream's live state. */
const BRIDGE = "mcp-bridge";
const HEALTH_TIMEOUT_MS = 2_000;

async function withPlane<T>(io: CommandIO, body: (conn: GeodeConnection) => Promise<T>): Promise<T> {
  const config = loadConfig(io.env);
  // A NATS that cannot be reached: one line and a hint, from the CLI (see runCli).
  const nc = await connectBus(config, "geode-mcp");
  try {
    return await body({ nc, names: buildNames(config.namespace) });
  } finally {
    await nc.close();
  }
}

function serverName(value: string | undefined): string {
  if (value === undefined) throw new UsageError("give an MCP server name");
  if (!McpServerNameSchema.safeParse(value).success)
    throw new UsageError(`MCP server names match [a-z][a-z0-9]{0,15}, got ${JSON.stringify(value)}`);
  return value;
}

/** `NAME=VALUE` options (`--effect 'read_*=read'`) as a record; a value without `=` is a UsageError. */
function pairs(values: string[] | undefined, flag: string, example: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values ?? []) {
    const cut = v.indexOf("=");
    if (cut <= 0) throw new UsageError(`--${flag} takes NAME=VALUE (e.g. --${flag} '${example}')`);
    out[v.slice(0, cut)] = v.slice(cut + 1);
  }
  return out;
}

/**
 * `--header` values as given; the record's schema refuses any that is not a reference to a
 * variable of the mcp-bridge's environment (`$VAR`), so a secret never lands in KV.
 */
function headerPairs(values: string[] | undefined): Record<string, string> | undefined {
  return values === undefined ? undefined : pairs(values, "header", "Authorization=$GITHUB_TOKEN");
}

/** Why a record is refused: one line per problem, each naming its field. */
function refusal(error: { issues: Array<{ path: PropertyKey[]; message: string }> }): string {
  const lines = error.issues.map((i) => {
    const field = i.path.map(String).join(".") || "record";
    // Never echo the value: a literal header value is most likely the secret itself.
    const hint =
      i.path[0] === "headers" && i.path.length > 1
        ? ` (the variable, in the mcp-bridge's environment, holds the whole value, e.g. 'Bearer …'; a secret is never stored)`
        : "";
    return `  ${field}: ${i.message}${hint}`;
  });
  return `the MCP server record is refused, nothing written:\n${lines.join("\n")}`;
}

/**
 * `geode mcp add NAME [--tools GLOB]… [--effect GLOB=EFFECT]… [--approve GLOB]… [--group G]…
 * [--env VAR]… -- COMMAND [ARGS…]` (a stdio server the mcp-bridge starts) or `geode mcp add NAME
 * --url URL [--header 'Authorization=$VAR']…` (an HTTP server): checks the record and writes it to
 * KV `{ns}_mcp_servers`, replacing one of the same name; the mcp-bridge follows the bucket.
 */
export const mcpAddCommand: CommandModule = {
  async run(args, io) {
    const dashes = args.indexOf("--");
    const own = dashes < 0 ? args : args.slice(0, dashes);
    const command = dashes < 0 ? [] : args.slice(dashes + 1);
    const { positionals, values } = parseArgs({
      args: own,
      allowPositionals: true,
      options: {
        url: { type: "string" },
        header: { type: "string", multiple: true },
        tools: { type: "string", multiple: true },
        effect: { type: "string", multiple: true },
        approve: { type: "string", multiple: true },
        group: { type: "string", multiple: true },
        env: { type: "string", multiple: true },
      },
    });
    if (positionals.length > 1)
      throw new UsageError(`give one server name; a stdio server's command goes after '--'`);
    const name = serverName(positionals[0]);
    const headers = headerPairs(values.header);
    const http = values.url !== undefined || headers !== undefined;
    const [cmd, ...cmdArgs] = command;
    const effects = values.effect && pairs(values.effect, "effect", "read_*=read");
    const candidate = {
      name,
      transport: http ? "http" : "stdio",
      ...(cmd !== undefined ? { command: cmd } : {}),
      ...(cmdArgs.length > 0 ? { args: cmdArgs } : {}),
      ...(values.env ? { env: values.env } : {}),
      ...(values.url !== undefined ? { url: values.url } : {}),
      ...(headers ? { headers } : {}),
      ...(values.tools ? { tools: values.tools } : {}),
      ...(effects ? { effects } : {}),
      ...(values.approve ? { approve: values.approve } : {}),
      ...(values.group ? { groups: [...new Set(values.group)].sort() } : {}),
      created_at: Date.now(),
      updated_by: operatorName(io),
    };
    const parsed = McpServerRecordSchema.safeParse(candidate);
    if (!parsed.success) throw new UsageError(refusal(parsed.error));
    const record = parsed.data;
    const replaced = await withPlane(io, async (conn) => {
      const store = await McpServerStore.open(conn);
      const before = await store.get(name);
      await store.put(record);
      return before !== null;
    });
    io.out(
      `MCP server ${name} ${replaced ? "replaced" : "added"} (${record.transport}, ${targetOf(record)}); the mcp-bridge registers its tools as ${name}_<tool>\n`,
    );
    return 0;
  },
};

/** What a record runs or reaches: the command line of a stdio server, the URL of an HTTP one. */
function targetOf(r: McpServerRecord): string {
  if (r.transport === "http") return r.url ?? "";
  return [r.command ?? "", ...(r.args ?? [])]
    .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a)))
    .join(" ");
}

const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** The bridge's view of each upstream, or null when no bridge answered (or its reply was malformed). */
async function bridgeStates(conn: GeodeConnection): Promise<Map<string, McpServerState> | null> {
  try {
    const reply = await requestJson(
      conn,
      conn.names.health(BRIDGE),
      {},
      { timeoutMs: HEALTH_TIMEOUT_MS, reply: HealthLeg.reply },
    );
    return new Map((reply.servers ?? []).map((s) => [s.name, s]));
  } catch (err) {
    if (err instanceof RequestFailedError || isMalformedReply(err)) return null;
    throw err;
  }
}

/**
 * `geode mcp ls [--json]`: every upstream record with its transport and target, and what the
 * mcp-bridge's health reply says of it (state, tools registered, last error); `unknown` when no
 * bridge answers.
 */
export const mcpLsCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({ args, options: { json: { type: "boolean", default: false } } });
    const { records, states } = await withPlane(io, async (conn) => {
      const store = await McpServerStore.open(conn);
      const records = await store.list((key) => io.err(`skipping malformed MCP server record ${key}\n`));
      return { records, states: records.length > 0 ? await bridgeStates(conn) : null };
    });
    if (records.length === 0) {
      io.out(
        values.json ? "[]\n" : "no MCP servers (add one with 'geode mcp add NAME -- COMMAND [ARGS…]')\n",
      );
      return 0;
    }
    const rows = records.map((r) => {
      const s = states?.get(r.name);
      return {
        ...r,
        target: targetOf(r),
        state: s?.state ?? (states === null ? "unknown" : "not seen"),
        tools_registered: s?.tools ?? null,
        protocol_version: s?.protocol_version ?? null,
        last_error: s?.last_error ?? null,
        attempts: s?.attempts ?? null,
      };
    });
    const notRunning =
      "the mcp-bridge is not running (no answer to its health request): the servers' state is unknown\n";
    if (values.json) {
      io.out(`${JSON.stringify(rows)}\n`);
      if (states === null) io.err(notRunning);
      return 0;
    }
    io.out(
      renderTable(
        ["name", "transport", "target", "state", "tools", "groups", "last error"],
        rows.map((r) => [
          r.name,
          r.transport,
          cut(r.target, 60),
          r.state,
          r.tools_registered === null ? "-" : String(r.tools_registered),
          r.groups?.join(", ") ?? "all",
          cut(r.last_error ?? "-", 80),
        ]),
      ),
    );
    if (states === null) io.out(notRunning);
    return 0;
  },
};

type McpTool = ToolDefinition & { mcp: NonNullable<ToolDefinition["mcp"]> };

/** The annotations a person weighs, in a few words. */
function annotationSummary(a: McpTool["mcp"]["annotations"]): string {
  const words = [
    a.readOnlyHint === true ? "read-only" : null,
    a.destructiveHint === true ? "destructive" : null,
    a.idempotentHint === true ? "idempotent" : null,
    a.openWorldHint === true ? "open-world" : null,
  ].filter((w) => w !== null);
  return words.join(", ") || "-";
}

/**
 * `geode mcp tools [NAME] [--json]`: the MCP tools registered in KV `{ns}_tools` (the mcp-bridge
 * registers them; definitions with an `mcp` origin), of one server or all.
 */
export const mcpToolsCommand: CommandModule = {
  async run(args, io) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: { json: { type: "boolean", default: false } },
    });
    if (positionals.length > 1) throw new UsageError("give at most one server name");
    const server = positionals[0] === undefined ? undefined : serverName(positionals[0]);
    const tools = await withPlane(io, async (conn) => {
      const store = await ToolStore.open(conn);
      return (await store.list()).filter(
        (t): t is McpTool => t.mcp !== undefined && (server === undefined || t.mcp.server === server),
      );
    });
    if (values.json) {
      io.out(
        `${JSON.stringify(
          tools.map((t) => ({
            name: t.name,
            server: t.mcp.server,
            tool: t.mcp.tool,
            effect: t.effect,
            requires_approval: t.requires_approval,
            annotations: t.mcp.annotations,
            description: t.description,
          })),
        )}\n`,
      );
      return 0;
    }
    if (tools.length === 0) {
      io.out(
        `no MCP tools registered${server ? ` for ${server}` : ""} (the mcp-bridge registers them; see 'geode mcp ls')\n`,
      );
      return 0;
    }
    io.out(
      renderTable(
        ["name", "server", "upstream tool", "effect", "approval", "annotations"],
        tools.map((t) => [
          t.name,
          t.mcp.server,
          cut(t.mcp.tool, 48),
          t.effect,
          t.requires_approval ? "required" : "-",
          annotationSummary(t.mcp.annotations),
        ]),
      ),
    );
    return 0;
  },
};

/** `geode mcp rm NAME`: deletes the record; the mcp-bridge stops the server and removes its tools. */
export const mcpRmCommand: CommandModule = {
  async run(args, io) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    if (positionals.length > 1) throw new UsageError("give one server name");
    const name = serverName(positionals[0]);
    const removed = await withPlane(io, async (conn) => (await McpServerStore.open(conn)).remove(name));
    if (!removed) {
      io.err(`no MCP server ${name} (see 'geode mcp ls')\n`);
      return 1;
    }
    io.out(`removed MCP server ${name}\n`);
    return 0;
  },
};
