import type { ConsoleApproval, ConsoleApprovalAnswer } from "@geode/contracts";
import { api, type Page } from "../api.js";
import { failed, PAGE_SIZE, pager, poll, say, show } from "../app.js";
import { button, el, time } from "../dom.js";

/** Pending approvals: allow or deny each with a reason; rows stay in place between polls. */
export function approvalsView(offset = 0): void {
  const rows = new Map<string, HTMLTableRowElement>();
  const body = el("tbody");
  const grid = el(
    "table",
    {},
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        ...["tool", "safety level", "detail", "session", "expires", "answer"].map((h) =>
          el("th", { scope: "col" }, h),
        ),
      ),
    ),
    body,
  );
  const empty = el("p", { class: "empty" }, "No approval is waiting.");
  const paging = el("div");
  show("Pending approvals", empty, grid, paging);
  const answer = async (a: ConsoleApproval, decision: "allow" | "deny", reason: HTMLInputElement) => {
    try {
      const request: ConsoleApprovalAnswer = { approval_id: a.approval_id, decision, reason: reason.value };
      await api("/api/approvals/answer", request);
      rows.get(a.approval_id)?.remove();
      rows.delete(a.approval_id);
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
    }
    for (const a of page.items) {
      if (rows.has(a.approval_id)) continue;
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
