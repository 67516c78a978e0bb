import type { ConsoleMcpServer, ConsoleMcpServers } from "@geode/contracts";
import { api } from "../api.js";
import { poll, show } from "../app.js";
import { counted, el, table } from "../dom.js";
import { badge } from "./verdicts.js";

type McpTool = ConsoleMcpServer["tools"][number];

const ADD_HINT = "geode mcp add NAME -- COMMAND";

/** What the upstream's annotations and the record say of a tool, in words. */
function traits(t: McpTool): string {
  const words = [
    t.read_only ? "read-only" : null,
    t.destructive ? "destructive" : null,
    t.open_world ? "open world" : null,
    t.requires_approval ? "needs approval" : null,
  ];
  return words.filter((w) => w !== null).join(", ");
}

function toolRow(t: McpTool): HTMLTableRowElement {
  const blocked = t.blocks > 0;
  return el(
    "tr",
    { "data-mcp-tool": t.name },
    el("td", {}, t.tool, el("br"), el("small", { title: "registered as" }, t.name)),
    el("td", {}, t.effect, traits(t) ? el("br") : null, el("small", {}, traits(t))),
    el("td", { class: "num", "data-field": "calls" }, t.calls.toLocaleString("en-US")),
    el(
      "td",
      { class: blocked ? "num bad" : "num", "data-field": "blocks" },
      blocked ? el("span", { class: "icon", "aria-hidden": "true" }, "⊘ ") : null,
      t.blocks.toLocaleString("en-US"),
    ),
  );
}

/** A server's tools, folded under its row; `open` keeps the ones the operator unfolded across refreshes. */
function toolsPart(s: ConsoleMcpServer, open: Set<string>, hours: number): HTMLElement {
  if (s.tools.length === 0)
    return el(
      "p",
      { class: "empty" },
      s.state === "connected" ? "It offers no tool." : "No tool registered.",
    );
  const details = el(
    "details",
    { "data-mcp-tools": s.name, ...(open.has(s.name) ? { open: "" } : {}) },
    el("summary", {}, `Tools of ${s.name} (${s.tools.length})`),
    table(["tool", "effect", `calls (${hours} h)`, `blocks (${hours} h)`], s.tools.map(toolRow), {
      class: "mcp-tools",
      "aria-label": `tools of ${s.name}`,
    }),
  );
  details.addEventListener("toggle", () => {
    if (details.open) open.add(s.name);
    else open.delete(s.name);
  });
  return details;
}

function serverRows(s: ConsoleMcpServer, open: Set<string>, hours: number): HTMLTableRowElement[] {
  const failed = s.state === "failed";
  const calls = s.tools.reduce((n, t) => n + t.calls, 0);
  const blocks = s.tools.reduce((n, t) => n + t.blocks, 0);
  const row = el(
    "tr",
    { "data-mcp-server": s.name, ...(failed ? { class: "bad-row" } : {}) },
    el(
      "td",
      {},
      s.name,
      s.groups ? el("br") : null,
      s.groups ? el("small", {}, `groups: ${s.groups.join(", ")}`) : null,
    ),
    el("td", { "data-field": "state" }, badge(s.state)),
    el("td", {}, s.transport, el("code", { class: "step-target", title: s.target }, s.target)),
    el(
      "td",
      { class: "num", "data-field": "tools" },
      s.tools_count === null ? `${s.tools.length} registered` : String(s.tools_count),
      el("br"),
      el("small", {}, `${counted(calls, "call")}, ${blocks} blocked`),
    ),
    el(
      "td",
      { "data-field": "last-error", ...(s.last_error ? { class: "bad" } : {}) },
      s.last_error === null ? "-" : el("div", { class: "step-reason", title: s.last_error }, s.last_error),
    ),
  );
  const tools = el("tr", { class: "mcp-tools-row" }, el("td", { colspan: "5" }, toolsPart(s, open, hours)));
  return [row, tools];
}

/** The servers, or how to add the first one. */
function serversPart(reply: ConsoleMcpServers, open: Set<string>): HTMLElement {
  if (reply.items.length === 0)
    return el(
      "p",
      { class: "empty", id: "mcp-empty" },
      "No MCP server is added, so agents see no MCP tool through the plane. Add one with ",
      el("code", {}, ADD_HINT),
      " (or ",
      el("code", {}, "geode mcp add NAME --url URL"),
      " for an HTTP server).",
    );
  const hours = Math.round(reply.window_ms / 3_600_000);
  return el(
    "div",
    {},
    reply.bridge
      ? null
      : el(
          "p",
          { class: "warn-note", id: "mcp-no-bridge" },
          "No mcp-bridge answered its health request: the servers' state is unknown.",
        ),
    table(
      ["server", "state", "transport", "tools", "last error"],
      reply.items.flatMap((s) => serverRows(s, open, hours)),
      { class: "mcp-servers", "aria-label": "MCP servers" },
    ),
  );
}

/**
 * The upstream MCP servers behind the plane (`geode mcp add`): each one's state as the mcp-bridge
 * sees it, its transport, its tools and its last error; under each, its tools with their effect
 * and their calls and blocks over the last 24 hours.
 */
export function mcpView(): void {
  const list = el("div", { id: "mcp-servers" }, el("p", { class: "empty" }, "Loading…"));
  const open = new Set<string>();
  show("MCP servers", list);
  poll(async () => {
    const reply = await api<ConsoleMcpServers>("/api/mcp/servers");
    list.replaceChildren(serversPart(reply, open));
    return true;
  }, 5_000);
}
