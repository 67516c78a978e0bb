import type { ConsoleLlm } from "@geode/contracts";
import { api } from "../api.js";
import { poll, show } from "../app.js";
import { lineChart } from "../charts.js";
import { counted, el, shortId, table, time } from "../dom.js";
import { usd } from "./story-view.js";
import { badge } from "./verdicts.js";

type Budget = ConsoleLlm["budgets"][number];
type Series = ConsoleLlm["agents"][number];

const SET_HINT = "geode budget set agent.NAME --usd 20 --window 1d";

/** Spend per hour of each series, as a chart with its totals as text. */
function spendChart(title: string, id: string, reply: ConsoleLlm, series: Series[], none: string) {
  return lineChart(
    title,
    id,
    reply.buckets,
    series.slice(0, 8).map((s) => ({ label: s.name, values: s.usd, points: true })),
    series
      .map(
        (s) =>
          `${s.name}: ${usd(s.total_usd)}, ${counted(s.total_tokens, "token")}, ${counted(s.total_calls, "call")}`,
      )
      .join("; ") || none,
    usd,
  );
}

const limitOf = (b: Budget) =>
  [
    b.limit_usd === null ? null : usd(b.limit_usd),
    b.limit_tokens === null ? null : counted(b.limit_tokens, "token"),
    b.requests_per_minute === null ? null : `${b.requests_per_minute}/min`,
  ]
    .filter((x) => x !== null)
    .join(" · ");

/**
 * A budget's use as a bar (its width the share of the limit, up to 100 %) and the words for it. The
 * widths are set through the CSSOM: the page's CSP refuses inline style attributes.
 */
function useBar(b: Budget): HTMLElement {
  const shown = Math.min(100, b.percent ?? 0);
  const fill = el("span");
  fill.style.width = `${shown}%`;
  const soft = el("span", { class: "use-soft", title: "soft limit" });
  soft.style.left = `${Math.min(100, b.soft_percent)}%`;
  return el(
    "div",
    { class: "use" },
    el(
      "div",
      {
        class: `use-bar ${b.state}`,
        role: "meter",
        "aria-valuemin": "0",
        "aria-valuemax": "100",
        "aria-valuenow": String(shown),
        "aria-label": `${b.key} used`,
      },
      fill,
      soft,
    ),
    el(
      "small",
      {},
      `${b.percent === null ? "" : `${b.percent}% · `}${usd(b.used_usd)}, ${counted(b.used_tokens, "token")}, ${counted(b.used_calls, "call")}`,
    ),
  );
}

function budgetRow(b: Budget): HTMLTableRowElement {
  return el(
    "tr",
    { "data-budget": b.key, ...(b.state === "spent" ? { class: "bad-row" } : {}) },
    el("td", {}, b.key),
    el(
      "td",
      {},
      b.window,
      b.window_end === null ? null : el("br"),
      b.window_end === null ? null : el("small", {}, `until ${time(b.window_end)}`),
    ),
    el("td", {}, limitOf(b) || "-"),
    el("td", { "data-field": "use" }, useBar(b)),
    el("td", { "data-field": "state" }, badge(b.state)),
  );
}

function budgetsPart(reply: ConsoleLlm): HTMLElement {
  if (reply.budgets.length === 0)
    return el(
      "p",
      { class: "empty", id: "llm-no-budgets" },
      "No budget is set: model calls are not capped. Set one with ",
      el("code", {}, SET_HINT),
      ".",
    );
  return table(["budget", "window", "limit", "used this window", "state"], reply.budgets.map(budgetRow), {
    class: "llm-budgets",
    "aria-label": "budgets",
  });
}

function sessionsPart(reply: ConsoleLlm): HTMLElement {
  if (reply.sessions.length === 0) return el("p", { class: "empty" }, "No model call in the last 24 hours.");
  return table(
    ["session", "calls", "tokens", "spend"],
    reply.sessions.map((s) =>
      el(
        "tr",
        { "data-llm-session": s.name },
        el(
          "td",
          {},
          el("a", { href: `#session/${encodeURIComponent(s.name)}`, title: s.name }, shortId(s.name, 24)),
        ),
        el("td", { class: "num" }, s.total_calls.toLocaleString("en-US")),
        el("td", { class: "num" }, s.total_tokens.toLocaleString("en-US")),
        el("td", { class: "num" }, usd(s.total_usd)),
      ),
    ),
    { class: "llm-sessions", "aria-label": "sessions by spend" },
  );
}

function refusedPart(reply: ConsoleLlm): HTMLElement {
  if (reply.refused.length === 0)
    return el("p", { class: "empty", id: "llm-no-refusals" }, "No call was refused.");
  return table(
    ["at", "agent", "session", "model", "budget", "why"],
    reply.refused.map((r) =>
      el(
        "tr",
        { "data-llm-refusal": r.session_id, class: "bad-row" },
        el("td", {}, time(r.ts)),
        el("td", {}, r.agent ?? "-"),
        el(
          "td",
          {},
          el(
            "a",
            { href: `#session/${encodeURIComponent(r.session_id)}`, title: r.session_id },
            shortId(r.session_id, 24),
          ),
        ),
        el("td", {}, `${r.model ?? "-"}${r.provider ? ` · ${r.provider}` : ""}`),
        el("td", {}, badge("refused"), " ", r.budget ?? "-"),
        el(
          "td",
          {},
          r.reason === "limit_usd"
            ? `${usd(r.used_usd ?? 0)} of ${usd(r.limit_usd ?? 0)} used`
            : r.reason === "limit_tokens"
              ? `${(r.used_tokens ?? 0).toLocaleString("en-US")} of ${counted(r.limit_tokens ?? 0, "token")} used`
              : (r.reason ?? "-"),
          r.window ? ` (${r.window})` : "",
        ),
      ),
    ),
    { class: "llm-refused", "aria-label": "refused calls" },
  );
}

function render(
  reply: ConsoleLlm,
  parts: Record<"totals" | "charts" | "budgets" | "sessions" | "refused", HTMLElement>,
) {
  const t = reply.totals;
  parts.totals.replaceChildren(
    el(
      "p",
      { id: "llm-totals" },
      `Last 24 hours: ${usd(t.usd)}, ${counted(t.tokens, "token")}, ${counted(t.calls, "call")}`,
      t.failed > 0 ? `, ${t.failed} failed` : "",
      ", ",
      t.refused > 0 ? el("strong", { class: "bad" }, `${t.refused} refused`) : "0 refused",
      ".",
    ),
  );
  parts.charts.replaceChildren(
    el(
      "section",
      { class: "charts", "aria-label": "spend charts" },
      spendChart(
        "Spend by agent (USD per hour), last 24 h",
        "chart-llm-agents",
        reply,
        reply.agents,
        "No model calls.",
      ),
      spendChart(
        "Spend by group (USD per hour), last 24 h",
        "chart-llm-groups",
        reply,
        reply.groups,
        "No calls by an agent in a group.",
      ),
    ),
  );
  parts.budgets.replaceChildren(budgetsPart(reply));
  parts.sessions.replaceChildren(sessionsPart(reply));
  parts.refused.replaceChildren(refusedPart(reply));
}

/**
 * Model calls through the LLM gateway: spend per hour over the last 24 hours by agent and group,
 * each budget and how much of it is used, the sessions that spent most, and the calls refused.
 */
export function llmView(): void {
  const parts = {
    totals: el("div", {}, el("p", { class: "empty" }, "Loading…")),
    charts: el("div"),
    budgets: el("div", { id: "llm-budgets" }),
    sessions: el("div", { id: "llm-sessions" }),
    refused: el("div", { id: "llm-refused" }),
  };
  show(
    "Model spend",
    parts.totals,
    parts.charts,
    el("h3", {}, "Budgets"),
    parts.budgets,
    el("h3", {}, "Refused calls"),
    parts.refused,
    el("h3", {}, "Sessions by spend"),
    parts.sessions,
  );
  poll(async () => {
    render(await api<ConsoleLlm>("/api/llm"), parts);
    return true;
  }, 5_000);
}
