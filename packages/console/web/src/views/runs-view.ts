import type { ConsoleTimelineItem, RunRecord } from "@geode/contracts";
import { api, type Page } from "../api.js";
import { failed, onLeave, PAGE_SIZE, pager, show } from "../app.js";
import { el, summary, table, time, timeMs } from "../dom.js";

/** Runs (KV `{ns}_runs`), each a link to its live timeline. */
export function runsView(offset = 0): void {
  const list = el("div");
  show("Runs", list);
  void (async () => {
    const page = await api<Page<RunRecord>>(`/api/runs?limit=${PAGE_SIZE}&offset=${offset}`);
    const rows = page.items.map((r) =>
      el(
        "tr",
        {},
        el("td", {}, el("a", { href: `#run/${encodeURIComponent(r.run_id)}` }, r.run_id)),
        el("td", {}, r.status),
        el("td", {}, time(r.opened_at)),
        el("td", {}, time(r.closed_at)),
      ),
    );
    list.replaceChildren(
      page.total === 0
        ? el("p", { class: "empty" }, "No run was opened.")
        : el(
            "div",
            {},
            table(["run", "status", "opened", "closed"], rows),
            pager(page, (o) => runsView(o)),
          ),
    );
  })().catch(failed);
}

/** Items kept on the page; older ones scroll away. */
const MAX_TIMELINE_ROWS = 2000;

/** One run's raw events and timeline records, from its start and then live (server-sent events). */
export function runView(runId: string): void {
  const count = el("span", { id: "timeline-count" }, "0");
  const state = el("span", { id: "timeline-state" }, "connecting");
  const body = el("tbody");
  show(
    `Run ${runId}`,
    el("p", {}, el("a", { href: "#sessions", class: "back" }, "← All sessions")),
    el("p", {}, count, " entries · ", state),
    el(
      "table",
      { class: "timeline" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ...["time", "entry", "source", "session / turn", "payload"].map((h) =>
            el("th", { scope: "col" }, h),
          ),
        ),
      ),
      body,
    ),
  );
  let n = 0;
  const source = new EventSource(`/api/runs/${encodeURIComponent(runId)}/timeline/stream`);
  source.addEventListener("open", () => (state.textContent = "live"));
  source.addEventListener("error", () => (state.textContent = "reconnecting"));
  source.addEventListener("item", (e) => {
    const item = JSON.parse((e as MessageEvent<string>).data) as ConsoleTimelineItem;
    const row = el(
      "tr",
      { "data-ts": String(item.ts) },
      el("td", {}, timeMs(item.ts)),
      el("td", {}, item.name),
      el("td", {}, item.source),
      el("td", {}, `${item.correlation.session_id || "-"} / ${item.correlation.turn_id || "-"}`),
      el("td", {}, el("pre", {}, summary(item.payload))),
    );
    // Two streams arrive side by side: keep the rows in time order.
    let before: Element | null = null;
    for (
      let r = body.lastElementChild;
      r && Number((r as HTMLElement).dataset["ts"]) > item.ts;
      r = r.previousElementSibling
    )
      before = r;
    body.insertBefore(row, before);
    if (body.childElementCount > MAX_TIMELINE_ROWS) body.firstElementChild?.remove();
    count.textContent = String(++n);
  });
  onLeave(() => source.close());
}
