import type {
  ConsolePolicies,
  ConsolePolicyBlock,
  ConsolePolicyDecisions,
  ConsolePolicySet,
} from "@geode/contracts";
import { api } from "../api.js";
import { poll, show } from "../app.js";
import { type Line, lineChart } from "../charts.js";
import { el, shortId, table, time } from "../dom.js";
import { badge } from "./verdicts.js";

const PACK_HINT = "geode policy add --pack destructive-shell";

function setRow(s: ConsolePolicySet): HTMLTableRowElement {
  return el(
    "tr",
    { "data-policy-set": s.name },
    el("td", {}, s.name),
    el("td", {}, badge(s.mode)),
    el("td", {}, el("code", { title: s.sha256 }, s.sha256.slice(0, 12))),
    el("td", {}, time(s.created_at), el("br"), el("small", {}, `by ${s.updated_by}`)),
    el(
      "td",
      {},
      s.policies.length === 0 ? "-" : s.policies.map((id) => id.slice(s.name.length + 1)).join(", "),
    ),
    el(
      "td",
      { class: "policy-state" },
      s.refused
        ? el(
            "span",
            { class: "refused bad", title: s.refused.reason },
            `in force; newer value (revision ${s.refused.revision}) refused: ${s.refused.reason}`,
          )
        : "in force",
    ),
  );
}

/** Stored keys of which nothing is in force: every value they hold was refused. */
function refusedPart(refused: ConsolePolicies["refused"]): HTMLElement | null {
  if (refused.length === 0) return null;
  return el(
    "ul",
    { class: "policy-refused", "aria-label": "refused policy sets" },
    ...refused.map((r) =>
      el(
        "li",
        { "data-policy-refused": r.key },
        el("code", {}, r.key),
        ` is not in force: its value (revision ${r.revision}) was refused: ${r.reason}`,
      ),
    ),
  );
}

/** The sets, or how to add the first one. */
function setsPart(sets: ConsolePolicySet[], refused: ConsolePolicies["refused"]): HTMLElement {
  const list = refusedPart(refused);
  if (list) return el("div", {}, setsTable(sets), list);
  return setsTable(sets);
}

function setsTable(sets: ConsolePolicySet[]): HTMLElement {
  if (sets.length === 0)
    return el(
      "p",
      { class: "empty", id: "policies-empty" },
      "No policy set is in force, so the policy-guard decides nothing. Add a shipped pack with ",
      el("code", {}, PACK_HINT),
      " (add --mode audit to only record what it would decide), or your own with ",
      el("code", {}, "geode policy add NAME FILE"),
      ".",
    );
  return table(["set", "mode", "sha256", "last change (UTC)", "policies", "state"], sets.map(setRow), {
    class: "policy-sets",
    "aria-label": "policy sets",
  });
}

/** One line per policy and outcome: enforced blocks and denies solid, audit-mode decisions dashed. */
function decisionsChart(d: ConsolePolicyDecisions): HTMLElement {
  const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const lines: Line[] = d.series.map((s) => ({
    label: `${s.policy} (${s.outcome})`,
    values: s.counts,
    ...(s.outcome === "audit" ? { dash: [6, 4] } : {}),
    points: true,
  }));
  const summary =
    d.series.map((s) => `${s.policy}: ${total(s.counts)} ${s.outcome}`).join("; ") ||
    `No policy decided anything in the last ${d.window}.`;
  return lineChart(`Decisions per policy, last ${d.window}`, "chart-policies", d.buckets, lines, summary);
}

function blockRow(b: ConsolePolicyBlock): HTMLTableRowElement {
  const verdict = b.mode === "audit" ? `would_${b.action}` : b.action === "deny" ? "denied" : "blocked";
  return el(
    "tr",
    { "data-block-session": b.session_id, ...(b.mode === "enforce" ? { class: "bad-row" } : {}) },
    el("td", {}, time(b.ts)),
    el(
      "td",
      {},
      el(
        "a",
        { href: `#session/${encodeURIComponent(b.session_id)}`, title: b.session_id },
        shortId(b.session_id, 18),
      ),
    ),
    el("td", {}, b.agent ?? "(runtime)", el("br"), el("small", {}, b.agent_kind)),
    el("td", {}, b.hook, b.tool_name ? el("br") : null, b.tool_name ? el("small", {}, b.tool_name) : null),
    el("td", {}, badge(verdict)),
    el("td", {}, b.policies.join(", ") || "-"),
    el("td", {}, b.reason),
  );
}

function blocksPart(blocks: ConsolePolicyBlock[]): HTMLElement {
  if (blocks.length === 0) return el("p", { class: "empty" }, "No call or prompt was blocked by a policy.");
  return table(
    ["time (UTC)", "session", "agent", "hook / tool", "decision", "policies", "reason"],
    blocks.map(blockRow),
    { class: "policy-blocks", "aria-label": "latest policy blocks" },
  );
}

/**
 * The policy-guard at a glance: the stored sets with their mode and digest, a chart of decisions
 * per policy over the last hour, and the latest blocks with a link to each session's story.
 */
export function policiesView(): void {
  const sets = el("div", { id: "policy-sets" }, el("p", { class: "empty" }, "Loading…"));
  const chart = el("div", { class: "charts-slot" });
  const blocks = el("div", { id: "policy-blocks" });
  show("Policies", sets, el("h2", {}, "Decisions"), chart, el("h2", {}, "Latest blocks"), blocks);
  const load = async () => {
    const reply = await api<ConsolePolicies>("/api/policies?window=1h");
    sets.replaceChildren(setsPart(reply.sets, reply.refused));
    chart.replaceChildren(decisionsChart(reply.decisions));
    blocks.replaceChildren(blocksPart(reply.blocks));
  };
  poll(load, 15_000);
}
