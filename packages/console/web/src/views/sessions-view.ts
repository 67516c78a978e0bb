import type { ConsoleSessionSummary, ConsoleSessionsPage, ConsoleStats } from "@geode/contracts";
import { api } from "../api.js";
import { onLeave, poll, show } from "../app.js";
import { statsCharts } from "../charts.js";
import { button, duration, el, shortId, table, time } from "../dom.js";
import { badge } from "./verdicts.js";

/** The list's filters, kept in the address (`#sessions?has_blocks=true`), so a filtered view is a link. */
const FILTERS = ["agent", "agent_kind", "status", "has_blocks", "since", "until", "q"] as const;
const KINDS = ["", "claude-code", "codex", "gemini-cli", "copilot", "qwen-code", "opencode", "runtime"];
const STATUSES = ["", "active", "paused", "completed", "error"];
const PAGE = 25;

function field(label: string, control: HTMLElement): HTMLElement {
  return el("label", { class: "field" }, el("span", {}, label), control);
}

function select(name: string, values: string[], current: string): HTMLSelectElement {
  const s = el("select", { name });
  for (const v of values) s.append(el("option", { value: v }, v === "" ? "any" : v));
  s.value = current;
  return s;
}

/** `datetime-local` values are local time; the API takes epoch ms. */
const toInstant = (local: string) => (local ? String(new Date(local).getTime()) : "");
const toLocal = (ms: string) => {
  if (!ms) return "";
  const d = new Date(Number(ms));
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

function filterForm(current: URLSearchParams): HTMLFormElement {
  const text = (name: string, attrs: Record<string, string> = {}) => {
    const i = el("input", { type: "text", name, ...attrs });
    i.value = current.get(name) ?? "";
    return i;
  };
  const when = (name: string) => {
    const i = el("input", { type: "datetime-local", name });
    i.value = toLocal(current.get(name) ?? "");
    return i;
  };
  const blocks = el("input", { type: "checkbox", name: "has_blocks" });
  blocks.checked = current.get("has_blocks") === "true";
  const form = el(
    "form",
    { class: "filters", role: "search", "aria-label": "filter sessions" },
    field("Session id", text("q", { type: "search", placeholder: "part of an id", autocomplete: "off" })),
    field("Agent", text("agent", { placeholder: "agent name", autocomplete: "off" })),
    field("Kind", select("agent_kind", KINDS, current.get("agent_kind") ?? "")),
    field("Status", select("status", STATUSES, current.get("status") ?? "")),
    el("label", { class: "field check" }, blocks, el("span", {}, "Has blocks")),
    field("From", when("since")),
    field("To", when("until")),
    el("button", { type: "submit" }, "Apply"),
    button("Clear", () => (location.hash = "#sessions")),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const next = new URLSearchParams();
    for (const name of FILTERS) {
      let v = String(data.get(name) ?? "").trim();
      if (name === "has_blocks") v = blocks.checked ? "true" : "";
      if (name === "since" || name === "until") v = toInstant(v);
      if (v) next.set(name, v);
    }
    location.hash = `#sessions${next.size ? `?${next}` : ""}`;
  });
  return form;
}

function sessionRow(s: ConsoleSessionSummary): HTMLTableRowElement {
  const ended = s.ended_at ?? (s.status === "active" || s.status === "paused" ? Date.now() : null);
  const stops = s.blocked > 0;
  return el(
    "tr",
    { "data-session": s.session_id, ...(stops || s.gaps > 0 ? { class: "bad-row" } : {}) },
    el(
      "td",
      {},
      el(
        "a",
        { href: `#session/${encodeURIComponent(s.session_id)}`, title: s.session_id },
        shortId(s.session_id, 18),
      ),
    ),
    el("td", {}, s.agent ?? "(runtime)", el("br"), el("small", {}, s.agent_kind)),
    el("td", {}, time(s.started_at)),
    el("td", {}, ended === null ? "-" : duration(ended - s.started_at)),
    el("td", {}, badge(s.status)),
    el("td", { class: "num" }, s.prompts),
    el(
      "td",
      { class: "num" },
      s.tool_calls,
      s.gaps > 0
        ? el(
            "span",
            {
              class: "badge bad",
              "data-verdict": "ungoverned",
              title: "results whose PreToolUse never reached the plane",
            },
            el("span", { class: "icon", "aria-hidden": "true" }, " ⚠ "),
            `${s.gaps} ungoverned`,
          )
        : null,
    ),
    el(
      "td",
      { class: "num" },
      stops
        ? el(
            "span",
            { class: "badge bad" },
            el("span", { class: "icon", "aria-hidden": "true" }, "⊘ "),
            `${s.blocked} blocked`,
          )
        : "0",
    ),
    el("td", { class: "num" }, `${s.approved} / ${s.denied}`),
    el("td", {}, badge(s.verification)),
  );
}

/**
 * The landing page: charts of the last hour, then one row per agent session with filters, a search
 * by session id and pages; rows of active sessions refresh while the page is open.
 */
export function sessionsView(query = ""): void {
  const current = new URLSearchParams(query);
  const charts = el("div", { class: "charts-slot" }, el("p", { class: "empty" }, "Loading charts…"));
  const list = el("div", { id: "session-list" });
  const paging = el("div", { class: "pager" });
  show("Sessions", charts, filterForm(current), list, paging);
  const cursors: Array<string | null> = [null];
  const load = async () => {
    const params = new URLSearchParams(current);
    params.set("limit", String(PAGE));
    const cursor = cursors.at(-1);
    if (cursor) params.set("cursor", cursor);
    const page = await api<ConsoleSessionsPage>(`/api/sessions?${params}`);
    const headers = [
      "session",
      "agent",
      "started (UTC)",
      "duration",
      "status",
      "prompts",
      "tool calls",
      "blocked",
      "approved / denied",
      "verification",
    ];
    list.replaceChildren(
      page.items.length === 0
        ? el("p", { class: "empty" }, "No session matches.")
        : table(headers, page.items.map(sessionRow), { class: "sessions" }),
    );
    paging.replaceChildren(
      cursors.length > 1
        ? button("Previous page", () => {
            cursors.pop();
            void load();
          })
        : "",
      page.next
        ? button("Next page", () => {
            cursors.push(page.next);
            void load();
          })
        : "",
    );
    return true;
  };
  poll(load, 3000);
  let charted = false;
  const loadCharts = async () => {
    const stats = await api<ConsoleStats>("/api/stats?window=1h");
    charts.replaceChildren(statsCharts(stats));
    charted = true;
  };
  void loadCharts().catch(() =>
    charts.replaceChildren(el("p", { class: "empty" }, "Charts need the projection.")),
  );
  const timer = setInterval(() => void (charted && loadCharts().catch(() => undefined)), 30_000);
  onLeave(() => clearInterval(timer));
}
