import type { ConsoleAudit, ConsoleHandler, ConsoleRecorder } from "@geode/contracts";
import { api, type Page } from "../api.js";
import { confirmDialog, failed, PAGE_SIZE, pager, poll, say, show } from "../app.js";
import { showAuditAlerts } from "../audit-banner.js";
import { age, button, el, table, time } from "../dom.js";

async function removeHandler(h: ConsoleHandler, reload: () => Promise<void>): Promise<void> {
  const closed =
    h.failure_mode === "closed"
      ? " It fails closed: until it is removed, every call it would see is blocked."
      : "";
  const ok = await confirmDialog(
    `Remove the registration of ${h.name} for ${h.hook}? Its lease expired ${age(h.heartbeat_age_ms - h.lease_ms)} ago.${closed}`,
    "Remove",
  );
  if (!ok) return;
  try {
    await api(
      `/api/handlers/${encodeURIComponent(h.hook)}/${encodeURIComponent(h.name)}`,
      undefined,
      "DELETE",
    );
    say(`Removed ${h.name} from ${h.hook}`);
    await reload();
  } catch (err) {
    failed(err);
  }
}

function handlerRow(h: ConsoleHandler, reload: () => Promise<void>): HTMLTableRowElement {
  const dead = h.lease_expired;
  return el(
    "tr",
    { "data-handler": `${h.hook}.${h.name}`, ...(dead ? { class: "bad-row" } : {}) },
    el("td", {}, h.hook),
    el("td", {}, h.name),
    el("td", {}, h.webhook_host ? `webhook → ${h.webhook_host}` : "NATS"),
    el("td", {}, h.priority),
    el("td", {}, h.failure_mode),
    el(
      "td",
      dead ? { class: "bad" } : {},
      dead ? el("span", { class: "icon", "aria-hidden": "true" }, "⚠ ") : null,
      `${age(h.heartbeat_age_ms)}${dead ? " (lease expired)" : ""}`,
    ),
    el("td", {}, `${h.recent_errors} / ${h.recent_calls}`),
    el("td", {}, h.error_rate === null ? "-" : `${(h.error_rate * 100).toFixed(0)} %`),
    el(
      "td",
      {},
      dead
        ? button("Remove…", () => void removeHandler(h, reload), {
            class: "deny",
            "aria-label": `remove ${h.name} of ${h.hook}`,
          })
        : null,
    ),
  );
}

/** Each audit log's latest checkpoint, its gaps and whether the notary keeps up (DESIGN section 20). */
function auditTable(audit: ConsoleAudit): HTMLElement {
  const notary =
    audit.notary === "down"
      ? el("p", { class: "bad" }, "The notary is not answering.")
      : el("p", {}, `Notary ${audit.notary}; a checkpoint at most every ${age(audit.checkpoint_ms ?? 0)}.`);
  const rows = audit.logs.map((l) => {
    const cp = l.checkpoint;
    const bad = l.gaps > 0 || l.behind;
    return el(
      "tr",
      { "data-audit-log": l.log, ...(bad ? { class: "bad-row" } : {}) },
      el("td", {}, l.origin),
      el("td", {}, l.size.toLocaleString("en-US")),
      el("td", {}, cp ? cp.size.toLocaleString("en-US") : "none yet"),
      el(
        "td",
        l.behind ? { class: "bad" } : {},
        cp ? `${age(cp.age_ms)}${l.behind ? " (behind)" : ""}` : "-",
      ),
      el("td", {}, cp ? time(cp.signed_at) : "-"),
      el("td", {}, cp ? cp.key_name : "-"),
      el(
        "td",
        l.gaps > 0 ? { class: "bad" } : {},
        l.gaps === 0
          ? "0"
          : `${l.gaps}${l.last_gap ? ` (latest ${l.last_gap.from_seq}..${l.last_gap.to_seq})` : ""}`,
      ),
    );
  });
  return el(
    "div",
    {},
    notary,
    table(["log", "leaves", "checkpoint size", "checkpoint age", "signed at", "key", "gaps"], rows, {
      "aria-label": "audit checkpoints",
    }),
  );
}

/**
 * Hook handlers with heartbeat age and error rate (a dead one can be removed), the recorder's lag
 * and each audit log's latest checkpoint.
 */
export function handlersView(offset = 0): void {
  const handlers = el("div");
  const lag = el("div");
  const audit = el("div");
  show(
    "Hook handlers",
    handlers,
    el("h2", {}, "Recorder lag"),
    lag,
    el("h2", {}, "Audit checkpoints"),
    audit,
  );
  const load = async () => {
    const [page, recorder] = await Promise.all([
      api<Page<ConsoleHandler>>(`/api/handlers?limit=${PAGE_SIZE}&offset=${offset}`),
      api<ConsoleRecorder>("/api/recorder"),
    ]);
    await api<ConsoleAudit>("/api/audit").then(
      (a) => {
        audit.replaceChildren(auditTable(a));
        showAuditAlerts(a.alerts);
      },
      (err: unknown) =>
        audit.replaceChildren(el("p", { class: "bad" }, err instanceof Error ? err.message : String(err))),
    );
    const headers = [
      "hook",
      "name",
      "served by",
      "priority",
      "failure mode",
      "heartbeat age",
      "errors / calls (5 min)",
      "error rate",
      "",
    ];
    handlers.replaceChildren(
      page.total === 0
        ? el("p", { class: "empty" }, "No hook handler is registered.")
        : el(
            "div",
            {},
            table(
              headers,
              page.items.map((h) => handlerRow(h, load)),
            ),
            pager(page, (o) => handlersView(o)),
          ),
    );
    lag.replaceChildren(
      table(
        ["stream", "lag (messages)", "delivered", "stream last"],
        recorder.streams.map((s) =>
          el(
            "tr",
            {},
            el("td", {}, s.stream),
            el("td", {}, s.present ? String(s.lag ?? "-") : "recorder not running"),
            el("td", {}, s.delivered_seq ?? "-"),
            el("td", {}, s.stream_last_seq ?? "-"),
          ),
        ),
      ),
    );
  };
  poll(load, 3000);
}
