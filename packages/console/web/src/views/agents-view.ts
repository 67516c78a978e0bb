import type { ConsoleAgent, ConsoleAgents } from "@geode/contracts";
import { api } from "../api.js";
import { poll, show } from "../app.js";
import { counted, el, table, time } from "../dom.js";
import { badge } from "./verdicts.js";

/** The last `geode connect --check`: ok or problem (with its line), or never run against this plane. */
function checkCell(a: ConsoleAgent): HTMLTableCellElement {
  const c = a.last_check;
  if (c === null) return el("td", { class: "warn" }, "never checked");
  return el(
    "td",
    c.ok ? {} : { class: "bad" },
    badge(c.ok ? "ok" : "problem"),
    ` ${c.agent_kind}, ${time(c.at)}`,
    el("div", { class: "step-reason", title: c.detail }, c.detail),
  );
}

/** The guarded hooks seen; none is an agent nobody governs (its tool calls reach no guard). */
function guardedCell(a: ConsoleAgent): HTMLTableCellElement {
  if (a.guarded_hooks.length > 0) return el("td", {}, a.guarded_hooks.join(", "));
  return el(
    "td",
    { class: "bad" },
    el("span", { class: "icon", "aria-hidden": "true" }, "⚠ "),
    a.sessions > 0 ? "none seen: not governed" : "none seen yet",
  );
}

function agentRow(a: ConsoleAgent): HTMLTableRowElement {
  const ungoverned = a.guarded_hooks.length === 0 && a.sessions > 0;
  const failing = a.last_check !== null && !a.last_check.ok;
  return el(
    "tr",
    { "data-agent": a.name, ...(ungoverned || failing ? { class: "bad-row" } : {}) },
    el("td", {}, a.name, a.groups.length ? el("br") : null, el("small", {}, a.groups.join(", "))),
    el("td", {}, a.kinds.join(", ") || "-"),
    el("td", {}, a.last_seen === null ? "-" : time(a.last_seen)),
    el("td", { class: "num" }, counted(a.sessions, "session")),
    checkCell(a),
    guardedCell(a),
  );
}

/** Every agent allowed to call the gateway: its kinds, its last `--check`, and whether its guards were seen. */
export function agentsView(): void {
  const list = el("div", { id: "agent-list" }, el("p", { class: "empty" }, "Loading…"));
  show("Agents", list);
  poll(async () => {
    const { items } = await api<ConsoleAgents>("/api/agents");
    list.replaceChildren(
      items.length === 0
        ? el("p", { class: "empty" }, "No agents: add one with geode agents add NAME.")
        : table(
            ["agent", "kinds", "last seen (UTC)", "sessions", "last check", "guarded hooks seen"],
            items.map(agentRow),
            { class: "agents" },
          ),
    );
    return true;
  }, 15_000);
}
