import type {
  ConsoleApproval,
  ConsoleApprovalAnswer,
  ConsoleHandler,
  ConsoleLoginRequest,
  ConsoleMe,
  ConsoleParkedTurn,
  ConsoleReceipt,
  ConsoleReceiptResolve,
  ConsoleRecorder,
  ConsoleSessionResolve,
  ConsoleTimelineItem,
  RunRecord,
} from "@geode/contracts";
import { ApiError, api, type Page } from "./api.js";
import { age, button, el, summary, table, time } from "./dom.js";

const main = document.getElementById("main") as HTMLElement;
const nav = document.getElementById("nav") as HTMLElement;
const status = document.getElementById("status") as HTMLElement;
const PAGE_SIZE = 50;

/** What the current view needs stopped when the operator leaves it (a poll, a live timeline). */
let leave: () => void = () => undefined;

function say(text: string, bad = false): void {
  status.textContent = text;
  status.className = bad ? "bad" : "";
}

function failed(err: unknown): void {
  if (err instanceof ApiError && err.status === 401) showLogin();
  else say(err instanceof Error ? err.message : String(err), true);
}

/** Runs `load` now and every `ms` until the view changes. */
function poll(load: () => Promise<void>, ms = 1500): void {
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    await load().catch(failed);
    if (!stopped) timer = setTimeout(tick, ms);
  };
  let timer = setTimeout(tick, 0);
  leave = () => {
    stopped = true;
    clearTimeout(timer);
  };
}

function pager(page: Page<unknown>, go: (offset: number) => void): HTMLElement {
  const prev = page.offset > 0 ? button("Previous", () => go(Math.max(0, page.offset - page.limit))) : null;
  const next = page.next_offset !== null ? button("Next", () => go(page.next_offset!)) : null;
  const shown = page.items.length === 0 ? "0" : `${page.offset + 1}–${page.offset + page.items.length}`;
  return el("div", { class: "pager" }, prev, next, `${shown} of ${page.total}`);
}

// ---- approvals ----

function approvalsView(offset = 0): void {
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
        ...["tool", "safety level", "detail", "session", "expires", "answer"].map((h) => el("th", {}, h)),
      ),
    ),
    body,
  );
  const empty = el("p", { class: "empty" }, "No approval is waiting.");
  const paging = el("div");
  main.replaceChildren(el("h2", {}, "Pending approvals"), empty, grid, paging);
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
  // Rows stay in place between polls, so a reason being typed is not lost.
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
      const reason = el("input", { type: "text", placeholder: "reason", "aria-label": "reason" });
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

// ---- paused sessions ----

function sessionsView(offset = 0): void {
  const list = el("div");
  main.replaceChildren(el("h2", {}, "Paused sessions awaiting verification"), list);
  const load = async () => {
    const page = await api<Page<ConsoleParkedTurn>>(
      `/api/sessions?status=paused&limit=${PAGE_SIZE}&offset=${offset}`,
    );
    const resolve = async (p: ConsoleParkedTurn, action: "deliver" | "revise", instruction: string) => {
      try {
        const body: ConsoleSessionResolve = {
          session_id: p.session_id,
          turn_id: p.turn_id,
          action,
          ...(action === "revise" ? { instruction } : {}),
        };
        await api("/api/sessions/resolve", body);
        say(`${action === "deliver" ? "Delivered" : "Sent back"} ${p.session_id} / ${p.turn_id}`);
        await load();
      } catch (err) {
        failed(err);
      }
    };
    const rows = page.items.map((p) => {
      const instruction = el("textarea", {
        rows: "2",
        placeholder: "instruction for a revision",
        "aria-label": "instruction",
      });
      return el(
        "tr",
        { "data-session": p.session_id },
        el("td", {}, p.session_id),
        el("td", {}, p.turn_id),
        el("td", {}, p.policy_action),
        el("td", {}, el("pre", { class: "pending-text" }, p.pending_text)),
        el(
          "td",
          {},
          button("Deliver", () => void resolve(p, "deliver", ""), { class: "allow" }),
          el("br"),
          instruction,
          el("br"),
          button("Revise", () => void resolve(p, "revise", instruction.value)),
        ),
      );
    });
    list.replaceChildren(
      page.total === 0
        ? el("p", { class: "empty" }, "No session is paused.")
        : el(
            "div",
            {},
            table(["session", "turn", "policy action", "pending text", "resolve"], rows),
            pager(page, (o) => sessionsView(o)),
          ),
    );
  };
  leave = () => undefined;
  void load().catch(failed);
}

// ---- receipts ----

function receiptsView(offset = 0): void {
  const list = el("div");
  main.replaceChildren(el("h2", {}, "Admitted receipts"), list);
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
      const reason = el("input", { type: "text", placeholder: "what you checked", "aria-label": "reason" });
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
  leave = () => undefined;
  void load().catch(failed);
}

// ---- runs and one run's live timeline ----

function runsView(offset = 0): void {
  const list = el("div");
  main.replaceChildren(el("h2", {}, "Runs"), list);
  leave = () => undefined;
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

function runView(runId: string): void {
  const count = el("span", { id: "timeline-count" }, "0");
  const state = el("span", { id: "timeline-state" }, "connecting");
  const body = el("tbody");
  main.replaceChildren(
    el("h2", {}, "Run ", runId),
    el("p", {}, count, " entries · ", state),
    el(
      "table",
      { class: "timeline" },
      el(
        "thead",
        {},
        el("tr", {}, ...["time", "entry", "source", "session / turn", "payload"].map((h) => el("th", {}, h))),
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
      el("td", {}, time(item.ts)),
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
  leave = () => source.close();
}

// ---- handlers and recorder lag ----

function handlersView(offset = 0): void {
  const handlers = el("div");
  const lag = el("div");
  main.replaceChildren(el("h2", {}, "Hook handlers"), handlers, el("h2", {}, "Recorder lag"), lag);
  poll(async () => {
    const [page, recorder] = await Promise.all([
      api<Page<ConsoleHandler>>(`/api/handlers?limit=${PAGE_SIZE}&offset=${offset}`),
      api<ConsoleRecorder>("/api/recorder"),
    ]);
    const rows = page.items.map((h) =>
      el(
        "tr",
        { "data-handler": `${h.hook}.${h.name}` },
        el("td", {}, h.hook),
        el("td", {}, h.name),
        el("td", {}, h.priority),
        el("td", {}, h.failure_mode),
        el(
          "td",
          h.lease_expired ? { class: "bad" } : {},
          `${age(h.heartbeat_age_ms)}${h.lease_expired ? " (lease expired)" : ""}`,
        ),
        el("td", {}, `${h.recent_errors} / ${h.recent_calls}`),
        el("td", {}, h.error_rate === null ? "-" : `${(h.error_rate * 100).toFixed(0)} %`),
      ),
    );
    handlers.replaceChildren(
      page.total === 0
        ? el("p", { class: "empty" }, "No hook handler is registered.")
        : el(
            "div",
            {},
            table(
              [
                "hook",
                "name",
                "priority",
                "failure mode",
                "heartbeat age",
                "errors / calls (5 min)",
                "error rate",
              ],
              rows,
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
            el("td", {}, s.present ? String(s.lag) : "recorder not running"),
            el("td", {}, s.delivered_seq ?? "-"),
            el("td", {}, s.stream_last_seq ?? "-"),
          ),
        ),
      ),
    );
  }, 3000);
}

// ---- sign-in and routing ----

function showLogin(): void {
  leave();
  leave = () => undefined;
  nav.hidden = true;
  const token = el("input", {
    type: "password",
    name: "token",
    autocomplete: "off",
    "aria-label": "console token",
  });
  const operator = el("input", {
    type: "text",
    name: "operator",
    autocomplete: "username",
    "aria-label": "your name",
  });
  operator.value = localStorage.getItem("geode-operator") ?? "";
  const form = el(
    "form",
    { class: "login" },
    el("label", {}, "Console token ", token),
    el("label", {}, "Your name ", operator),
    el("button", { type: "submit" }, "Sign in"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void (async () => {
      try {
        const login: ConsoleLoginRequest = { token: token.value, operator: operator.value };
        await api("/api/login", login);
        localStorage.setItem("geode-operator", operator.value);
        token.value = "";
        say("");
        await start();
      } catch (err) {
        say(err instanceof Error ? err.message : String(err), true);
      }
    })();
  });
  main.replaceChildren(el("h2", {}, "Sign in"), form);
}

function route(): void {
  leave();
  say("");
  const hash = location.hash.replace(/^#/, "") || "approvals";
  const page = hash.startsWith("run/") ? "runs" : hash;
  for (const a of nav.querySelectorAll("a")) a.classList.toggle("active", a.dataset["page"] === page);
  if (hash.startsWith("run/")) {
    runView(decodeURIComponent(hash.slice(4)));
    return;
  }
  const views: Record<string, () => void> = {
    approvals: approvalsView,
    sessions: () => sessionsView(),
    receipts: () => receiptsView(),
    runs: () => runsView(),
    handlers: () => handlersView(),
  };
  (views[page] ?? approvalsView)();
}

async function start(): Promise<void> {
  try {
    const me = await api<ConsoleMe>("/api/me");
    (document.getElementById("who") as HTMLElement).textContent = me.operator ?? "";
    nav.hidden = false;
    route();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) showLogin();
    else failed(err);
  }
}

document.getElementById("logout")?.addEventListener("click", () => {
  void api("/api/logout", {}).finally(showLogin);
});
window.addEventListener("hashchange", () => {
  if (!nav.hidden) route();
});
void start();
