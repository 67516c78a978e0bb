import type { ConsoleApproval, ConsoleApprovalAnswer } from "@geode/contracts";
import { api, type Page } from "../api.js";
import { failed, PAGE_SIZE, pager, poll, say, show } from "../app.js";
import { button, el, time } from "../dom.js";

/** `name (kind)` of the agent whose session asks; `-` for a runtime's session. */
function agentOf(a: ConsoleApproval): string {
  if (a.agent && a.agent_kind) return `${a.agent} (${a.agent_kind})`;
  return a.agent ?? a.agent_kind ?? "-";
}

/** The policies that asked for a person, with their reason; `-` until the console can tell. */
function policyOf(a: ConsoleApproval): string {
  if (a.policies.length === 0) return "-";
  return a.policy_reason ? `${a.policies.join(", ")}: ${a.policy_reason}` : a.policies.join(", ");
}

/** The table of pending approvals, its header and `body`. */
function approvalsTable(body: HTMLTableSectionElement): HTMLTableElement {
  return el(
    "table",
    {},
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        ...["tool", "safety level", "detail", "agent", "asked by policy", "session", "expires", "answer"].map(
          (h) => el("th", { scope: "col" }, h),
        ),
      ),
    ),
    body,
  );
}

/**
 * Pending approvals: allow or deny each with a reason; rows stay in place between polls (only the
 * policy cell is refreshed: the console learns it once the recorder has written the call).
 */
export function approvalsView(offset = 0): void {
  const rows = new Map<string, HTMLTableRowElement>();
  const policyCells = new Map<string, HTMLTableCellElement>();
  const body = el("tbody");
  const grid = approvalsTable(body);
  const empty = el("p", { class: "empty" }, "No approval is waiting.");
  const paging = el("div");
  show("Pending approvals", empty, grid, paging);
  const answer = async (a: ConsoleApproval, decision: "allow" | "deny", reason: HTMLInputElement) => {
    try {
      const request: ConsoleApprovalAnswer = { approval_id: a.approval_id, decision, reason: reason.value };
      await api("/api/approvals/answer", request);
      rows.get(a.approval_id)?.remove();
      rows.delete(a.approval_id);
      policyCells.delete(a.approval_id);
      say(`${decision === "allow" ? "Allowed" : "Denied"} ${a.tool_name}`);
    } catch (err) {
      failed(err);
    }
  };
  poll(async () => {
    const page = await api<Page<ConsoleApproval>>(`/api/approvals?limit=${PAGE_SIZE}&offset=${offset}`);
    const ids = new Set(page.items.map((a) => a.approval_id));
    for (const [id, row] of rows) {
      if (ids.has(id)) continue;
      row.remove();
      rows.delete(id);
      policyCells.delete(id);
    }
    for (const a of page.items) {
      const known = policyCells.get(a.approval_id);
      if (known) known.textContent = policyOf(a);
      if (rows.has(a.approval_id)) continue;
      const policy = el("td", { "data-field": "policy" }, policyOf(a));
      policyCells.set(a.approval_id, policy);
      const reason = el("input", {
        type: "text",
        placeholder: "reason",
        "aria-label": `reason for ${a.tool_name}`,
      });
      const row = el(
        "tr",
        { "data-approval": a.approval_id },
        el("td", {}, a.tool_name),
        el("td", {}, a.safety_level),
        el("td", {}, el("pre", {}, a.detail)),
        el("td", { "data-field": "agent" }, agentOf(a)),
        policy,
        el("td", {}, a.correlation.session_id || "-"),
        el("td", {}, time(a.expires_at)),
        el(
          "td",
          {},
          reason,
          el("br"),
          button("Allow", () => void answer(a, "allow", reason), { class: "allow" }),
          button("Deny", () => void answer(a, "deny", reason), { class: "deny" }),
        ),
      );
      rows.set(a.approval_id, row);
      body.append(row);
    }
    empty.hidden = page.total > 0;
    grid.hidden = page.total === 0;
    paging.replaceChildren(page.total > PAGE_SIZE ? pager(page, (o) => approvalsView(o)) : "");
  });
}
