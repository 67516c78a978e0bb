import type { ConsoleReceipt, ConsoleReceiptResolve } from "@geode/contracts";
import { api, type Page } from "../api.js";
import { failed, PAGE_SIZE, pager, say, show } from "../app.js";
import { button, el, table, time } from "../dom.js";

/** Admitted receipts: a lapsed one is resolved as completed or failed after checking the outside world. */
export function receiptsView(offset = 0): void {
  const list = el("div");
  show("Admitted receipts", list);
  const load = async () => {
    const page = await api<Page<ConsoleReceipt>>(
      `/api/receipts?state=admitted&limit=${PAGE_SIZE}&offset=${offset}`,
    );
    const resolve = async (r: ConsoleReceipt, as: "completed" | "failed", reason: string) => {
      try {
        const body: ConsoleReceiptResolve = { key: r.key, as, ...(reason ? { reason } : {}) };
        await api("/api/receipts/resolve", body);
        say(`Receipt ${r.key} resolved as ${as}`);
        await load();
      } catch (err) {
        failed(err);
      }
    };
    const rows = page.items.map((r) => {
      const reason = el("input", {
        type: "text",
        placeholder: "what you checked",
        "aria-label": `what you checked for ${r.key}`,
      });
      const lapsed = !r.running;
      return el(
        "tr",
        { "data-receipt": r.key },
        el("td", {}, r.key),
        el("td", {}, r.tool_name),
        el("td", {}, r.running ? `running until ${time(r.lease_until)}` : "lapsed: outcome unknown"),
        el("td", {}, time(r.admitted_at)),
        el(
          "td",
          {},
          lapsed ? reason : null,
          lapsed ? el("br") : null,
          lapsed
            ? button("Completed", () => void resolve(r, "completed", reason.value), { class: "allow" })
            : null,
          lapsed ? button("Failed", () => void resolve(r, "failed", reason.value), { class: "deny" }) : null,
        ),
      );
    });
    list.replaceChildren(
      page.total === 0
        ? el("p", { class: "empty" }, "No receipt is admitted.")
        : el(
            "div",
            {},
            table(["key", "tool", "lease", "admitted", "resolve"], rows),
            pager(page, (o) => receiptsView(o)),
          ),
    );
  };
  void load().catch(failed);
}
